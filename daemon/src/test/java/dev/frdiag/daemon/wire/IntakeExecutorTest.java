package dev.frdiag.daemon.wire;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** How far behind the transport's pool says it is: the wait of its oldest queued task, on a clock the test moves. */
class IntakeExecutorTest {
  private final AtomicLong nanos = new AtomicLong(5_000_000_000L);
  private final IntakeExecutor pool = new IntakeExecutor(1, Thread::new, nanos::get);

  @AfterEach
  void stop() {
    pool.shutdownNow();
  }

  @Test
  void theLagIsHowLongTheOldestWaitingTaskHasWaitedAndNothingOnceTheQueueIsDrained() throws InterruptedException {
    assertThat(pool.lagNanos()).isZero();
    CountDownLatch busy = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    pool.execute(() -> {
      busy.countDown();
      await(release);
    });
    assertThat(busy.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(pool.lagNanos()).as("a running task is being read, not waiting").isZero();

    CountDownLatch ran = new CountDownLatch(2);
    pool.execute(ran::countDown);
    nanos.addAndGet(2_000_000_000L);
    pool.execute(ran::countDown);
    nanos.addAndGet(1_000_000_000L);
    assertThat(pool.lagNanos()).as("the older of the two waiting tasks").isEqualTo(3_000_000_000L);

    release.countDown();
    assertThat(ran.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(pool.lagNanos()).isZero();
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
