package org.mtporacle.io;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;

/** File-system errors in words for one-line messages: "PATH: no such file or directory", never an exception name. */
public final class IoErrors {
    private IoErrors() {
    }

    public static String describe(IOException e) {
        if (e instanceof FileSystemException f) {
            String what = switch (f) {
                case NoSuchFileException x -> "no such file or directory";
                case AccessDeniedException x -> "permission denied";
                case FileAlreadyExistsException x -> "already exists";
                case DirectoryNotEmptyException x -> "directory not empty";
                case NotDirectoryException x -> "not a directory";
                default -> f.getReason() != null ? f.getReason() : "cannot be accessed";
            };
            return (f.getFile() != null ? f.getFile() : "a file") + (f.getOtherFile() != null ? " → "
                    + f.getOtherFile() : "") + ": " + what;
        }
        return e.getMessage() != null ? e.getMessage() : "input/output error";
    }
}
