package dev.frdiag.daemon.wire;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The fixed pool the transport runs its handlers on, which knows how far behind it is: how long the oldest task still
 * waiting for a thread has waited. gRPC hands each stream's messages to its executor as one task per stream with
 * messages waiting, so that wait is how long the most starved stream's messages have gone unread.
 */
public final class IntakeExecutor extends AbstractExecutorService {
  private final ThreadPoolExecutor pool;
  private final LongSupplier nanoTime;

  public IntakeExecutor(int threads, ThreadFactory threadFactory, LongSupplier nanoTime) {
    this.pool = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
        threadFactory);
    this.nanoTime = nanoTime;
  }

  @Override
  public void execute(Runnable task) {
    pool.execute(new Queued(task, nanoTime.getAsLong()));
  }

  /**
   * How long the oldest task still waiting for a thread has waited; 0 when none waits. Every message that reached the
   * daemon more than this long ago has been handled (the queue is first in, first out).
   */
  public long lagNanos() {
    Runnable head = pool.getQueue().peek();
    return head instanceof Queued q ? Math.max(0, nanoTime.getAsLong() - q.queuedAtNanos) : 0;
  }

  @Override
  public void shutdown() {
    pool.shutdown();
  }

  @Override
  public List<Runnable> shutdownNow() {
    return pool.shutdownNow();
  }

  @Override
  public boolean isShutdown() {
    return pool.isShutdown();
  }

  @Override
  public boolean isTerminated() {
    return pool.isTerminated();
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
    return pool.awaitTermination(timeout, unit);
  }

  /** A task with the time it was handed to the pool. */
  private record Queued(Runnable task, long queuedAtNanos) implements Runnable {
    @Override
    public void run() {
      task.run();
    }
  }
}
