package dev.frdiag.collector.ring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Readers snapshot the ring while a writer appends and completes records at full speed. Every field of a record is
 * a function of its id, so a copy mixing two occupants of a slot (a torn read) shows up as a field that does not
 * match the copy's own record id.
 */
class RecordRingStressTest {
  // Small, so the writer laps the ring constantly and readers keep landing on slots being rewritten.
  private static final int CAPACITY = 32;
  // Records stay SCHEDULED, then STARTED, for a while so snapshots see every state.
  private static final int START_LAG = 4;
  private static final int COMPLETE_LAG = 8;
  private static final long MAX_RECORDS = 10_000_000;
  private static final long MAX_RUN_NANOS = TimeUnit.SECONDS.toNanos(2);
  private static final int READERS = 2;

  private static final long CREATED = 1_000_000_000L;
  private static final long STARTED_AT = 2_000_000_000L;
  private static final long COMPLETED_AT = 3_000_000_000L;
  private static final RecordRing.StateListener IGNORE = (group, p2p, seq, state, timeNs) -> { };

  @Test
  void concurrentSnapshotsNeverSeeATornRecord() throws InterruptedException {
    RecordRing ring = new RecordRing(CAPACITY);
    AtomicBoolean writerDone = new AtomicBoolean();
    CountDownLatch go = new CountDownLatch(1);
    // Only the first few problems are kept: a broken seqlock produces millions.
    ConcurrentLinkedQueue<String> torn = new ConcurrentLinkedQueue<>();
    AtomicLong tornCount = new AtomicLong();
    AtomicLong consistentReads = new AtomicLong();
    long[][] statesSeen = new long[READERS][4];

    Thread writer = new Thread(() -> {
      await(go);
      long deadline = System.nanoTime() + MAX_RUN_NANOS;
      for (long id = 0; id < MAX_RECORDS; id++) {
        // Checking the clock every record would slow the writer down to the readers' pace.
        if ((id & 0xfff) == 0 && System.nanoTime() > deadline) {
          break;
        }
        long appended = append(ring, id);
        if (appended != id && tornCount.getAndIncrement() < 10) {
          torn.add("append returned " + appended + " for record " + id);
        }
        if (id >= START_LAG) {
          ring.markStarted(id - START_LAG, id - START_LAG + STARTED_AT, IGNORE);
        }
        if (id >= COMPLETE_LAG) {
          ring.markCompleted(id - COMPLETE_LAG, id - COMPLETE_LAG + COMPLETED_AT, IGNORE);
        }
      }
      writerDone.set(true);
    }, "ring-writer");

    List<Thread> readers = new ArrayList<>();
    for (int r = 0; r < READERS; r++) {
      long[] seen = statesSeen[r];
      readers.add(new Thread(() -> {
        RecordView view = new RecordView();
        await(go);
        long ok = 0;
        while (!writerDone.get()) {
          long next = ring.nextRecordId();
          for (long id = Math.max(0, next - CAPACITY); id < next; id++) {
            if (ring.tryRead(id, view) != RecordRing.ReadResult.OK) {
              continue;
            }
            String problem = inconsistency(id, view);
            if (problem != null) {
              if (tornCount.getAndIncrement() < 10) {
                torn.add(problem);
              }
              continue;
            }
            seen[view.state]++;
            ok++;
          }
        }
        consistentReads.addAndGet(ok);
      }, "ring-reader-" + r));
    }

    writer.start();
    readers.forEach(Thread::start);
    go.countDown();
    writer.join(TimeUnit.SECONDS.toMillis(30));
    for (Thread reader : readers) {
      reader.join(TimeUnit.SECONDS.toMillis(30));
    }

    assertThat(writer.isAlive()).isFalse();
    assertThat(readers).noneMatch(Thread::isAlive);
    assertThat(torn).as("torn or mismatched reads (%d in all)", tornCount.get()).isEmpty();
    assertThat(ring.lostUpdates()).as("a lone writer never finds a slot busy").isZero();
    // Guards against a run that proved nothing because the readers barely got to read.
    assertThat(consistentReads.get()).isGreaterThan(10_000);
    long[] total = new long[4];
    for (long[] seen : statesSeen) {
      for (int s = 1; s < 4; s++) {
        total[s] += seen[s];
      }
    }
    assertThat(total[RecordRing.SCHEDULED]).isPositive();
    assertThat(total[RecordRing.STARTED]).isPositive();
    assertThat(total[RecordRing.COMPLETED]).isPositive();
  }

  /**
   * A reader that asks for the newest id races the writer between handing the id out and writing its slot. The
   * record is not lost then, only not written yet: GONE would make the reporter count it as dropped. GONE is only
   * right once the id's slot may have been reused, i.e. once {@code id + capacity} was handed out.
   */
  @Test
  void aRecordHandedOutButNotYetWrittenIsNeverReportedGone() throws InterruptedException {
    // Large, so the writer cannot lap the ring between a read and the check after it and hide a wrong GONE.
    int capacity = 1 << 16;
    RecordRing ring = new RecordRing(capacity);
    AtomicBoolean writerDone = new AtomicBoolean();
    CountDownLatch go = new CountDownLatch(1);
    ConcurrentLinkedQueue<String> wrong = new ConcurrentLinkedQueue<>();
    AtomicLong wrongCount = new AtomicLong();
    AtomicLong pendingSeen = new AtomicLong();
    AtomicLong okSeen = new AtomicLong();

    Thread writer = new Thread(() -> {
      await(go);
      long deadline = System.nanoTime() + MAX_RUN_NANOS;
      for (long id = 0; id < MAX_RECORDS; id++) {
        if ((id & 0xfff) == 0 && System.nanoTime() > deadline) {
          break;
        }
        append(ring, id);
      }
      writerDone.set(true);
    }, "ring-writer");
    Thread reader = new Thread(() -> {
      RecordView view = new RecordView();
      await(go);
      while (!writerDone.get()) {
        long id = ring.nextRecordId() - 1;
        if (id < 0) {
          continue;
        }
        RecordRing.ReadResult read = ring.tryRead(id, view);
        if (read == RecordRing.ReadResult.GONE && ring.nextRecordId() <= id + capacity
            && wrongCount.getAndIncrement() < 10) {
          wrong.add("record " + id + " reported GONE while only " + ring.nextRecordId() + " ids were handed out");
        } else if (read == RecordRing.ReadResult.PENDING) {
          pendingSeen.incrementAndGet();
        } else if (read == RecordRing.ReadResult.OK) {
          okSeen.incrementAndGet();
        }
      }
    }, "ring-reader");

    writer.start();
    reader.start();
    go.countDown();
    writer.join(TimeUnit.SECONDS.toMillis(30));
    reader.join(TimeUnit.SECONDS.toMillis(30));

    assertThat(wrong).as("records reported GONE before they could have been overwritten (%d in all)",
        wrongCount.get()).isEmpty();
    assertThat(okSeen.get()).as("the reader kept up with the writer often enough to prove something").isPositive();
  }

  @Test
  void aSlotStillHoldingTheRecordBeforeItReadsAsPendingAndTheNextLapAsGone() {
    RecordRing ring = new RecordRing(2);
    RecordView view = new RecordView();
    append(ring, 0);
    append(ring, 1);
    append(ring, 2);
    assertThat(ring.tryRead(0, view)).isEqualTo(RecordRing.ReadResult.GONE);
    assertThat(ring.tryRead(2, view)).isEqualTo(RecordRing.ReadResult.OK);
    assertThat(ring.tryRead(3, view)).as("an id not handed out yet").isEqualTo(RecordRing.ReadResult.PENDING);
  }

  @Test
  void anAppendThatGaveUpOnABusySlotReadsAsGoneNotPendingForever() {
    RecordRing ring = new RecordRing(4);
    RecordView view = new RecordView();
    append(ring, 0);
    assertThat(ring.beginWrite(1)).isTrue();
    append(ring, 1);
    ring.endWrite(1);

    assertThat(ring.lostUpdates()).isEqualTo(1);
    assertThat(ring.tryRead(1, view)).as("record 1 will never be written").isEqualTo(RecordRing.ReadResult.GONE);
    assertThat(ring.tryRead(0, view)).isEqualTo(RecordRing.ReadResult.OK);
  }

  private static long append(RecordRing ring, long id) {
    return ring.append((int) (id * 2), id * 3, id * 11, id * 5, (int) (id * 13), (id & 1) == 1, (int) (id * 17),
        (int) (id * 19), (int) (id * 23), (int) (id * 29), (int) (id * 31), id + CREATED);
  }

  /** Null when every field of {@code view} is the one record {@code id} was written with. */
  private static String inconsistency(long id, RecordView v) {
    long r = v.recordId;
    boolean fieldsMatch = r == id
        && v.processGroup == (int) (r * 2)
        && v.collectiveSeq == r * 3
        && v.p2pSeq == r * 11
        && v.opId == r * 5
        && v.op == (int) (r * 13)
        && v.isP2p == ((r & 1) == 1)
        && v.peer == (int) (r * 17)
        && v.inputs == (int) (r * 19)
        && v.outputs == (int) (r * 23)
        && v.stack == (int) (r * 29)
        && v.thread == (int) (r * 31)
        && v.timeCreatedNs == r + CREATED;
    boolean stateMatches = switch (v.state) {
      case RecordRing.SCHEDULED -> v.timeStartedNs == 0 && v.timeCompletedNs == 0;
      case RecordRing.STARTED -> v.timeStartedNs == r + STARTED_AT && v.timeCompletedNs == 0;
      case RecordRing.COMPLETED -> v.timeStartedNs == r + STARTED_AT && v.timeCompletedNs == r + COMPLETED_AT;
      default -> false;
    };
    if (fieldsMatch && stateMatches) {
      return null;
    }
    return "asked for " + id + ", got record " + r + ": group=" + v.processGroup + " collectiveSeq="
        + v.collectiveSeq + " p2pSeq=" + v.p2pSeq + " opId=" + v.opId + " op=" + v.op + " isP2p=" + v.isP2p
        + " peer=" + v.peer + " state=" + v.state + " created=" + v.timeCreatedNs
        + " started=" + v.timeStartedNs + " completed=" + v.timeCompletedNs;
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
