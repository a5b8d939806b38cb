package org.mtporacle.mlx.handle;

import org.junit.jupiter.api.Test;
import org.mtporacle.api.MtpException;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The MLX thread: calls run there (inline from it), posts keep their order, and busy time counts only the work. */
class MlxThreadTest {

    @Test
    void busyTimeCountsTheWorkRunThereAndNotTheWaitBetween() throws Exception {
        MlxThread t = new MlxThread();
        long before = t.busyNanos();
        t.run(() -> sleep(30));
        long afterCall = t.busyNanos();
        assertThat(afterCall - before).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(30));
        Thread.sleep(400); // idle: not counted
        CountDownLatch posted = new CountDownLatch(1);
        t.post(() -> {
            sleep(20);
            posted.countDown();
        });
        assertThat(posted.await(5, TimeUnit.SECONDS)).isTrue();
        t.run(() -> { }); // the post is done and counted once a later call has run
        long total = t.busyNanos() - before;
        assertThat(total).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(50))
                .isLessThan(TimeUnit.MILLISECONDS.toNanos(50 + 300)); // the 400 ms idle would exceed it
    }

    @Test
    void callsRunOnTheThreadInlineFromItAndRethrowUnchanged() {
        MlxThread t = new MlxThread();
        assertThat(t.isCurrent()).isFalse();
        assertThat(t.call(t::isCurrent)).isTrue();
        assertThat(t.call(() -> t.call(() -> 7))).isEqualTo(7); // nested: inline, no deadlock
        MtpException e = MtpException.invalidArgument("x");
        assertThatThrownBy(() -> t.run(() -> {
            throw e;
        })).isSameAs(e);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
        }
    }
}
