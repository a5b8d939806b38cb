package org.mtporacle.wire;

import org.mtporacle.io.ModelLoader;
import org.mtporacle.io.TargetLoader;
import org.mtporacle.reference.ReferenceBackend;

import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.PrintStream;

/** The reference behind the wire, as {@code mtp serve-wire --backend reference} runs it (for tests). */
public final class ReferenceWireMain {
    private ReferenceWireMain() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream frames = new PrintStream(new FileOutputStream(FileDescriptor.out), false);
        System.setOut(System.err);
        new WireServer(new ReferenceBackend(), ModelLoader::load, TargetLoader::load, System.err)
                .serve(System.in, frames);
    }
}
