package org.mtporacle.io;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

/**
 * Files named inside an untrusted document (a golden's {@code tensors.file}, a shard index's shard names): the name
 * must be a plain file name (no separator, not {@code .} or {@code ..}, no control character, at most 255
 * characters), it is resolved in the document's own folder, and what it names must be a regular file (a device,
 * a pipe or a folder is refused) of at most the caller's limit, checked before anything is read. A symbolic link in
 * the folder is followed, as model folders in a Hugging Face cache are made of links; the name rules keep the lookup
 * itself inside the folder. Messages never show the file's bytes.
 */
public final class DocumentFiles {
    /** The longest file name accepted (the common file-system limit). */
    public static final int MAX_NAME_CHARS = 255;

    private DocumentFiles() {
    }

    /**
     * The file called {@code name} beside {@code document}.
     *
     * @param where    the message prefix naming the document and the field, e.g. {@code "golden x.json: tensors.file"}
     * @param maxBytes the largest file accepted
     * @throws MtpException MALFORMED_FILE when the name is not a plain file name, the file is missing, not regular,
     *                      or larger than {@code maxBytes}
     */
    public static Path sibling(Path document, String name, long maxBytes, String where) {
        Path dir = document.toAbsolutePath().getParent();
        return inFolder(dir, name, maxBytes, where);
    }

    /** {@link #sibling} for a name resolved in {@code dir} itself. */
    public static Path inFolder(Path dir, String name, long maxBytes, String where) {
        checkName(name, where);
        Path f;
        try {
            f = dir.resolve(name);
        } catch (java.nio.file.InvalidPathException e) {
            throw MtpException.malformedFile(where + " = " + UntrustedText.quote(name) + " is not a file name on this "
                    + "system (" + e.getReason() + "; a non-ASCII name needs a UTF-8 locale, e.g. LANG=C.UTF-8)");
        }
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(f, BasicFileAttributes.class);
        } catch (IOException e) {
            throw MtpException.malformedFile(where + " names " + UntrustedText.quote(name) + ", which does not exist"
                    + " in " + UntrustedText.path(dir));
        }
        if (!a.isRegularFile()) {
            throw MtpException.malformedFile(where + " names " + UntrustedText.quote(name)
                    + ", which is not a regular file");
        }
        if (a.size() > maxBytes) {
            throw MtpException.malformedFile(where + " names " + UntrustedText.quote(name) + " of " + a.size()
                    + " bytes, more than the " + maxBytes + " allowed");
        }
        return f;
    }

    /**
     * SHA-256 (lowercase hex) of {@code file}'s bytes, read through a read-only mapping: check a named file's digest
     * with this before parsing it, so that a file that is not the one the document vouches for is never parsed (and
     * no parse error can show its bytes).
     */
    public static String sha256(Path file, String where) {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file);
             java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
            long size = ch.size();
            if (size > 0) {
                java.lang.foreign.MemorySegment all = ch.map(java.nio.channels.FileChannel.MapMode.READ_ONLY, 0, size,
                        arena);
                long chunk = 1L << 20;
                for (long off = 0; off < size; off += chunk) {
                    md.update(all.asSlice(off, Math.min(chunk, size - off)).asByteBuffer());
                }
            }
            return java.util.HexFormat.of().formatHex(md.digest());
        } catch (IOException e) {
            throw MtpException.malformedFile(where + ": cannot read (" + UntrustedText.clip(e.toString()) + ")");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is a required JDK algorithm", e);
        }
    }

    /** Refuses a name that is not a plain file name. */
    public static void checkName(String name, String where) {
        String why = null;
        if (name == null || name.isEmpty()) {
            why = "is empty";
        } else if (name.length() > MAX_NAME_CHARS) {
            why = "is longer than " + MAX_NAME_CHARS + " characters";
        } else if (name.equals(".") || name.equals("..")) {
            why = "is a folder reference";
        } else if (name.indexOf('/') >= 0 || name.indexOf('\\') >= 0 || name.indexOf(':') >= 0) {
            why = "holds a path separator";
        } else if (!UntrustedText.line(name).equals(name) || name.indexOf('\0') >= 0) {
            why = "holds a control character or a lone surrogate";
        }
        if (why != null) {
            throw MtpException.malformedFile(where + " = " + UntrustedText.quote(name) + " " + why
                    + ", expected a file name in the same folder");
        }
    }
}
