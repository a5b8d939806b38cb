package org.mtporacle.mlx.handle;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Owns the arrays one computation creates and frees them in reverse order on {@link #close()}; arrays that outlive
 * the computation are {@link #release released} to their new owner first. Confined to the MLX thread.
 */
public final class MlxScope implements AutoCloseable {
    private final MlxLibrary lib;
    private final Map<MlxArray, Boolean> live = new IdentityHashMap<>();
    private final List<MlxArray> order = new ArrayList<>();
    private boolean closed;

    public MlxScope(MlxLibrary lib) {
        this.lib = lib;
        confined();
    }

    private void confined() {
        if (!lib.thread().isCurrent()) {
            throw new IllegalStateException("mlx: scopes live on the MLX thread");
        }
    }

    /** Takes ownership of {@code a}. */
    MlxArray track(MlxArray a) {
        confined();
        if (closed) {
            throw new IllegalStateException("mlx: scope is closed");
        }
        a.owner = this;
        live.put(a, Boolean.TRUE);
        order.add(a);
        return a;
    }

    /** Gives up ownership of {@code a}: the caller now frees it with {@link MlxArray#close()}. */
    public MlxArray release(MlxArray a) {
        if (a.owner == this) {
            a.owner = null;
            live.remove(a);
        }
        return a;
    }

    void forget(MlxArray a) {
        live.remove(a);
    }

    /** Arrays still owned (for tests). */
    public int size() {
        return live.size();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        confined();
        closed = true;
        RuntimeException first = null;
        for (int i = order.size() - 1; i >= 0; i--) {
            MlxArray a = order.get(i);
            if (live.containsKey(a)) {
                try {
                    a.owner = null;
                    live.remove(a);
                    a.close();
                } catch (RuntimeException e) {
                    if (first == null) {
                        first = e;
                    }
                }
            }
        }
        order.clear();
        if (first != null) {
            throw first;
        }
    }
}
