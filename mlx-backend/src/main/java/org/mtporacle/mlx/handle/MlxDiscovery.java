package org.mtporacle.mlx.handle;

import org.mtporacle.api.MtpException;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * Where to look for mlx-c: an explicit path ({@code MTP_MLX_LIBRARY} or {@code -Dmtp.mlx.library}), else
 * {@code System.mapLibraryName("mlxc")} in {@code java.library.path}, {@code LD_LIBRARY_PATH} /
 * {@code DYLD_LIBRARY_PATH} and the usual prefixes. Built once at the edge from the environment; pure data after that.
 *
 * @param explicit   the path the user named, or null
 * @param explicitBy which setting named it ({@code "MTP_MLX_LIBRARY"} or {@code "-Dmtp.mlx.library"})
 * @param searchDirs directories searched for the platform's library name when nothing is named
 */
public record MlxDiscovery(Path explicit, String explicitBy, List<Path> searchDirs) {

    public MlxDiscovery {
        searchDirs = List.copyOf(searchDirs);
    }

    /** Reads {@code MTP_MLX_LIBRARY}, {@code -Dmtp.mlx.library} and the library path settings, once. */
    public static MlxDiscovery fromEnvironment() {
        String env = System.getenv("MTP_MLX_LIBRARY");
        String prop = System.getProperty("mtp.mlx.library");
        Path explicit = null;
        String by = null;
        if (env != null && !env.isBlank()) {
            explicit = Path.of(env.strip());
            by = "MTP_MLX_LIBRARY";
        } else if (prop != null && !prop.isBlank()) {
            explicit = Path.of(prop.strip());
            by = "-Dmtp.mlx.library";
        }
        LinkedHashSet<Path> dirs = new LinkedHashSet<>();
        addPathList(dirs, System.getProperty("java.library.path"));
        addPathList(dirs, System.getenv("LD_LIBRARY_PATH"));
        addPathList(dirs, System.getenv("DYLD_LIBRARY_PATH"));
        for (String d : new String[] {"/usr/local/lib", "/opt/homebrew/lib", "/usr/lib"}) {
            dirs.add(Path.of(d));
        }
        return new MlxDiscovery(explicit, by, new ArrayList<>(dirs));
    }

    private static void addPathList(LinkedHashSet<Path> dirs, String list) {
        if (list == null) {
            return;
        }
        for (String d : list.split(File.pathSeparator)) {
            if (!d.isBlank()) {
                dirs.add(Path.of(d));
            }
        }
    }

    /** The platform file name of mlx-c ({@code libmlxc.so}, {@code libmlxc.dylib}, {@code mlxc.dll}). */
    public static String libraryName() {
        return System.mapLibraryName("mlxc");
    }

    /**
     * The library file to load.
     *
     * @throws MtpException UNAVAILABLE naming what was searched and how to fix it
     */
    public Path locate() {
        if (explicit != null) {
            if (!explicit.toFile().isFile()) {
                throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: " + explicitBy + " names " + explicit
                        + ", which is not a file — point it at libmlxc (mlx-c 0.6.x)");
            }
            return explicit;
        }
        List<Path> candidates = new ArrayList<>();
        for (Path d : searchDirs) {
            candidates.add(d.resolve(libraryName()));
        }
        List<Path> found = MlxLibrary.existing(candidates);
        if (!found.isEmpty()) {
            return found.getFirst();
        }
        throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: " + libraryName() + " (mlx-c 0.6.x) not found "
                + "in java.library.path, LD_LIBRARY_PATH/DYLD_LIBRARY_PATH, /usr/local/lib, /opt/homebrew/lib or "
                + "/usr/lib — set MTP_MLX_LIBRARY=/path/to/" + libraryName() + " (or -Dmtp.mlx.library), or on macOS "
                + "`brew install mlx-c`");
    }
}
