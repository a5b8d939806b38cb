package org.mtporacle.mlx.handle;

import org.mtporacle.api.MtpException;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The one thread that drives MLX (its default streams and our stream are per thread): every public call submits its
 * native work here and waits. Calls made from this thread run inline. MtpExceptions are rethrown unchanged.
 */
public final class MlxThread {
    private final ExecutorService executor;
    private volatile Thread thread;

    MlxThread() {
        executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "mlx");
            t.setDaemon(true);
            thread = t;
            return t;
        });
    }

    /** True on the MLX thread. */
    public boolean isCurrent() {
        return Thread.currentThread() == thread;
    }

    /** Runs {@code work} on the MLX thread and returns its result. */
    public <T> T call(Callable<T> work) {
        if (isCurrent()) {
            return invoke(work);
        }
        Future<T> f = executor.submit(() -> invoke(work));
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "mlx: interrupted while waiting for MLX", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "mlx: " + cause, cause);
        }
    }

    /** Runs {@code work} on the MLX thread. */
    public void run(Runnable work) {
        call(() -> {
            work.run();
            return null;
        });
    }

    /**
     * Queues {@code work} on the MLX thread without waiting for it (inline on the MLX thread). Work runs in the order
     * it was queued, before any later {@link #call}, so a later call sees its effects. For releases nobody waits for;
     * a failure is dropped, as there is nobody left to tell.
     */
    public void post(Runnable work) {
        if (isCurrent()) {
            work.run();
            return;
        }
        executor.execute(() -> {
            try {
                work.run();
            } catch (RuntimeException ignored) {
                // a release that failed leaves nothing to undo and nobody to report to
            }
        });
    }

    private static <T> T invoke(Callable<T> work) {
        try {
            return work.call();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new MtpException(MtpException.Kind.BACKEND_FAILURE, "mlx: " + e, e);
        }
    }
}
