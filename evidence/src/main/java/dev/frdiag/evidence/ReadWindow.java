package dev.frdiag.evidence;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Reads files on a few threads while the caller takes what each gave. At most twice as many files as there are
 * threads are read ahead of the caller, so a large folder is never held whole; results reach the caller's thread in
 * the order the files were given, so what is read never depends on which thread was faster.
 */
final class ReadWindow {
  /**
   * Threads that read: decoding is CPU-bound, and two keep both cores of a small machine busy while bounding the
   * memory of files being read at once.
   */
  static final int THREADS = 2;
  /** How often a wait for the next result looks whether a reading thread died. */
  private static final long DIED_CHECK_MILLIS = 200;

  /** Makes the pool a window reads on, its threads made by the window's factory. */
  @FunctionalInterface
  interface Pools {
    ExecutorService of(int threads, ThreadFactory factory);
  }

  private final int threads;
  private final Pools pools;

  /** A window of {@link #THREADS} threads. */
  ReadWindow() {
    this(THREADS, Executors::newFixedThreadPool);
  }

  ReadWindow(int threads, Pools pools) {
    if (threads < 1) {
      throw new IllegalArgumentException("threads must be positive, got " + threads);
    }
    this.threads = threads;
    this.pools = Objects.requireNonNull(pools, "pools");
  }

  /**
   * Applies {@code read} to each of {@code items} on the window's threads and hands each result to {@code take} on
   * this thread, in the order of {@code items}. The threads are gone when this returns.
   *
   * @throws RuntimeException or {@link Error} what {@code read} or {@code take} threw, or what killed a reading thread
   *     outside a read (its reads would otherwise be waited for for ever)
   */
  <T, R> void each(List<T> items, Function<? super T, ? extends R> read, Consumer<? super R> take)
      throws InterruptedException {
    AtomicReference<Throwable> died = new AtomicReference<>();
    // Daemons, so a read never keeps the process alive; what kills one outside a read (out of memory in the pool's
    // own code, which leaves its reads undone) is kept for the caller.
    ExecutorService pool = pools.of(threads, new ThreadFactoryBuilder().setNameFormat("fr-diagnose-read")
        .setDaemon(true).setUncaughtExceptionHandler((thread, e) -> died.compareAndSet(null, e)).build());
    try {
      Queue<Future<? extends R>> ahead = new ArrayDeque<>();
      int submitted = 0;
      for (int taken = 0; taken < items.size(); taken++) {
        while (submitted < items.size() && submitted - taken < 2 * threads) {
          T item = items.get(submitted++);
          ahead.add(pool.submit(() -> read.apply(item)));
        }
        take.accept(next(ahead.remove(), died));
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static <R> R next(Future<R> read, AtomicReference<Throwable> died) throws InterruptedException {
    while (true) {
      try {
        return read.get(DIED_CHECK_MILLIS, TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        Throwable death = died.get();
        if (death instanceof Error error) {
          throw error;
        }
        if (death != null) {
          throw new IllegalStateException("a reading thread failed", death);
        }
      } catch (ExecutionException e) {
        // Readers turn every problem with a file into a result; what is left is not about a file.
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException re) {
          throw re;
        }
        if (cause instanceof Error error) {
          throw error;
        }
        throw new IllegalStateException(cause);
      }
    }
  }
}
