package org.mtporacle.mlx.handle;

import org.mtporacle.api.MtpException;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one thread that drives MLX (its default streams and our stream are per thread): every public call submits its
 * native work here and waits. Calls made from this thread run inline. MtpExceptions are rethrown unchanged.
 * {@link #busyNanos} counts the time spent running submitted and posted work, so a benchmark can split a call into
 * that work and the hand-off around it. (Spinning instead of parking on either side of the hand-off was measured on
 * the H200 twice, in different sessions: no gain, so it parks.)
 */
public final class MlxThread {
    private final ExecutorService executor;
    private volatile Thread thread;
    private final AtomicLong busy = new AtomicLong();

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

    /** Nanoseconds the MLX thread has spent running submitted and posted work so far. */
    public long busyNanos() {
        return busy.get();
    }

    /** Runs {@code work} on the MLX thread and returns its result. */
    public <T> T call(Callable<T> work) {
        if (isCurrent()) {
            return invoke(work);
        }
        Future<T> f = executor.submit(() -> timed(work));
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
            long start = System.nanoTime();
            try {
                work.run();
            } catch (RuntimeException ignored) {
                // a release that failed leaves nothing to undo and nobody to report to
            } finally {
                busy.addAndGet(System.nanoTime() - start);
            }
        });
    }

    private <T> T timed(Callable<T> work) {
        long start = System.nanoTime();
        try {
            return invoke(work);
        } finally {
            busy.addAndGet(System.nanoTime() - start);
        }
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
