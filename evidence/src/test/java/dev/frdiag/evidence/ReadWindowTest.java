package dev.frdiag.evidence;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class ReadWindowTest {
  @Test
  void resultsReachTheCallerInTheOrderGivenWhateverFinishesFirst() throws Exception {
    // The first read cannot end before the second has: a window that handed results on as they end would give 1, 0.
    CountDownLatch secondRead = new CountDownLatch(1);
    List<Integer> taken = new ArrayList<>();
    List<String> takenOn = new ArrayList<>();

    new ReadWindow().each(List.of(0, 1, 2, 3, 4), i -> {
      if (i == 0) {
        await(secondRead);
      }
      if (i == 1) {
        secondRead.countDown();
      }
      return i;
    }, i -> {
      taken.add(i);
      takenOn.add(Thread.currentThread().getName());
    });

    assertThat(taken).containsExactly(0, 1, 2, 3, 4);
    assertThat(takenOn).containsOnly(Thread.currentThread().getName());
  }

  @Test
  void readsAtMostTwiceAsManyAheadOfTheCallerAsItHasThreads() throws Exception {
    AtomicInteger submitted = new AtomicInteger();
    List<ThreadPoolExecutor> pools = new ArrayList<>();
    List<Integer> submittedAtTake = new ArrayList<>();

    new ReadWindow(2, (n, threads) -> {
      ThreadPoolExecutor pool = new ThreadPoolExecutor(n, n, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
          threads) {
        @Override
        public void execute(Runnable read) {
          submitted.incrementAndGet();
          super.execute(read);
        }
      };
      pools.add(pool);
      return pool;
    }).each(IntStream.range(0, 10).boxed().toList(), i -> i, i -> submittedAtTake.add(submitted.get()));

    // Four reads are under way before the first result is taken, then one more per result taken.
    assertThat(submittedAtTake).containsExactly(4, 5, 6, 7, 8, 9, 10, 10, 10, 10);
    assertThat(pools).singleElement().satisfies(p -> assertThat(p.isShutdown()).isTrue());
  }

  @Test
  void aReadingThreadThatDiesOutsideAReadIsRethrownNotWaitedForForEver() {
    Error inThePool = new Error("the pool's own code failed");
    // Dies before running the read it took: that read's result never comes.
    ReadWindow window = new ReadWindow(2, (n, threads) -> new ThreadPoolExecutor(n, n, 0, TimeUnit.SECONDS,
        new LinkedBlockingQueue<>(), threads) {
      @Override
      protected void beforeExecute(Thread t, Runnable r) {
        throw inThePool;
      }
    });

    assertTimeoutPreemptively(Duration.ofSeconds(30), () ->
        assertThatThrownBy(() -> window.each(List.of("a", "b"), s -> s, s -> {})).isSameAs(inThePool));
  }

  @Test
  void whatAReadThrowsReachesTheCaller() {
    IllegalStateException bug = new IllegalStateException("a reader's bug");

    assertThatThrownBy(() -> new ReadWindow().each(List.of("a", "b", "c"), s -> {
      if (s.equals("b")) {
        throw bug;
      }
      return s;
    }, s -> {})).isSameAs(bug);
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
