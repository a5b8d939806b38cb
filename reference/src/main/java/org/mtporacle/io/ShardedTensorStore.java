package org.mtporacle.io;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;

import org.mtporacle.api.HostTensor;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.UntrustedText;

/**
 * Tensors spread over several safetensors files of one directory. With {@code model.safetensors.index.json} the
 * shards are those its {@code weight_map} (tensor name → shard file name) lists; without it, every
 * {@code *.safetensors} file of the directory except {@value #TARGET_HEAD_FILE}. A tensor may live in one shard only.
 */
public final class ShardedTensorStore implements TensorStore {
    /** The Hugging Face shard index file name. */
    public static final String INDEX_FILE = "model.safetensors.index.json";
    /** The companion's target-head file, never part of the companion's own store ({@link ModelLoader}). */
    public static final String TARGET_HEAD_FILE = "target_head.safetensors";
    /** The largest shard index read; a real one lists each tensor once, a few hundred kilobytes at most. */
    public static final long MAX_INDEX_BYTES = 64L * 1024 * 1024;

    private final List<SafetensorsFile> shards;
    private final Map<String, SafetensorsFile> byName;

    private ShardedTensorStore(List<SafetensorsFile> shards, Map<String, SafetensorsFile> byName) {
        this.shards = shards;
        this.byName = byName;
    }

    /**
     * Opens the tensors of directory {@code dir}.
     *
     * @throws MtpException MALFORMED_FILE for a malformed index or shard, a missing shard, a listed tensor absent from
     *                      its shard, or a tensor present in two shards; INCOMPATIBLE_MODEL when there is no shard
     */
    public static ShardedTensorStore open(Path dir) {
        return open(dir, false);
    }

    /** As {@link #open(Path)}; {@code gcManaged} as in {@link SafetensorsFile#open(Path, boolean)}. */
    public static ShardedTensorStore open(Path dir, boolean gcManaged) {
        Path index = dir.resolve(INDEX_FILE);
        if (Files.isRegularFile(index)) {
            return fromIndex(dir, index, gcManaged);
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".safetensors"))
                    .filter(p -> !p.getFileName().toString().equals(TARGET_HEAD_FILE))
                    .filter(Files::isRegularFile).sorted().toList();
        } catch (IOException e) {
            throw new MtpException(MtpException.Kind.MALFORMED_FILE, "tensor store " + dir + ": cannot list: " + e, e);
        }
        if (files.isEmpty()) {
            throw MtpException.incompatibleModel("tensor store " + dir + ": no .safetensors file found");
        }
        return ofFiles(files, gcManaged);
    }

    /**
     * Opens {@code files} as one store.
     *
     * @throws MtpException MALFORMED_FILE when a file is malformed or a tensor name occurs in two files
     */
    public static ShardedTensorStore ofFiles(List<Path> files) {
        return ofFiles(files, false);
    }

    /** As {@link #ofFiles(List)}; {@code gcManaged} as in {@link SafetensorsFile#open(Path, boolean)}. */
    public static ShardedTensorStore ofFiles(List<Path> files, boolean gcManaged) {
        List<SafetensorsFile> opened = new ArrayList<>();
        try {
            Map<String, SafetensorsFile> byName = new TreeMap<>();
            for (Path f : files.stream().sorted(Comparator.comparing(p -> p.getFileName().toString())).toList()) {
                SafetensorsFile sf = SafetensorsFile.open(f, gcManaged);
                opened.add(sf);
                for (String name : sf.names()) {
                    SafetensorsFile other = byName.putIfAbsent(name, sf);
                    if (other != null) {
                        throw MtpException.malformedFile("tensor store: tensor '" + name + "' is present in two shards, "
                                + other.path().getFileName() + " and " + f.getFileName());
                    }
                }
            }
            return new ShardedTensorStore(List.copyOf(opened), byName);
        } catch (RuntimeException e) {
            opened.forEach(SafetensorsFile::close);
            throw e;
        }
    }

    private static ShardedTensorStore fromIndex(Path dir, Path index, boolean gcManaged) {
        JsonNode root = StrictJson.read(index, MAX_INDEX_BYTES, "shard index");
        JsonNode map = root.get("weight_map");
        if (map == null || !map.isObject()) {
            throw MtpException.malformedFile("shard index " + UntrustedText.path(index) + ": no weight_map object");
        }
        String where = "shard index " + UntrustedText.path(index);
        Map<String, String> weightMap = new TreeMap<>();
        for (Map.Entry<String, JsonNode> e : map.properties()) {
            if (!e.getValue().isTextual()) {
                throw MtpException.malformedFile(where + ": tensor " + UntrustedText.quote(e.getKey()) + " maps to "
                        + StrictJson.describe(e.getValue()) + ", expected a file name in " + UntrustedText.path(dir));
            }
            String shard = e.getValue().textValue();
            DocumentFiles.checkName(shard, where + ": the shard of tensor " + UntrustedText.quote(e.getKey()));
            weightMap.put(e.getKey(), shard);
        }
        List<Path> files = new ArrayList<>();
        for (String shard : new java.util.TreeSet<>(weightMap.values())) {
            String example = weightMap.entrySet().stream().filter(x -> x.getValue().equals(shard)).findFirst()
                    .orElseThrow().getKey();
            // shards are mapped, never copied, so any size is fine; the name and the file type are checked
            files.add(DocumentFiles.inFolder(dir, shard, Long.MAX_VALUE, where + ": the shard of tensor "
                    + UntrustedText.quote(example)));
        }
        ShardedTensorStore store = ofFiles(files, gcManaged);
        for (Map.Entry<String, String> e : weightMap.entrySet()) {
            SafetensorsFile holder = store.byName.get(e.getKey());
            if (holder == null || !holder.path().getFileName().toString().equals(e.getValue())) {
                store.close();
                throw MtpException.malformedFile("shard index " + index + ": tensor '" + e.getKey() + "' is listed in "
                        + e.getValue() + " but " + (holder == null ? "absent from every shard"
                        : "found in " + holder.path().getFileName()));
            }
        }
        return store;
    }

    @Override
    public List<String> names() {
        return List.copyOf(byName.keySet());
    }

    @Override
    public boolean contains(String name) {
        return byName.containsKey(name);
    }

    @Override
    public HostTensor tensor(String name) {
        SafetensorsFile f = byName.get(name);
        if (f == null) {
            throw MtpException.invalidArgument("tensor store: no tensor '" + name + "' in "
                    + shards.stream().map(s -> s.path().getFileName().toString()).toList());
        }
        return f.tensor(name);
    }

    @Override
    public Path fileOf(String name) {
        SafetensorsFile f = byName.get(name);
        return f == null ? null : f.path();
    }

    @Override
    public List<Path> files() {
        return shards.stream().map(SafetensorsFile::path).toList();
    }

    /** The shard files, opened. */
    public List<SafetensorsFile> shards() {
        return shards;
    }

    @Override
    public void close() {
        shards.forEach(SafetensorsFile::close);
    }
}
