package dev.frdiag.agent;

import dev.frdiag.proto.v1.RankEvent;
import dev.frdiag.readers.pytorch.OpTypes;
import dev.frdiag.readers.pytorch.WatchdogLine;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayDeque;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one local rank's watchdog lines tell the daemon, waiting for the rank's stream: a timeout merged with its
 * status line into one event, the failures the watchdog caught, a stuck watchdog. Bounded: when the daemon is away
 * for long, the oldest events are dropped and counted.
 *
 * <p>Not thread-safe: the agent uses it under its lock.
 */
final class RankEvents {
  // The agent's logger, so operators keep finding these lines under the name they always had.
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);

  private final int rank;
  private final int capacity;
  private final Clock clock;
  private final ArrayDeque<RankEvent> events = new ArrayDeque<>();
  private long dropped;
  /** Seq of the newest watchdog timeout seen, so its companion status line is not a second event. */
  private long lastTimeoutSeq = -1;

  /**
   * @param capacity events kept while the stream is down
   * @param clock stamps each event with when the agent read its line
   */
  RankEvents(int rank, int capacity, Clock clock) {
    this.rank = rank;
    this.capacity = capacity;
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** Translates one watchdog line of this rank into what it tells the daemon, if anything. */
  void onLine(WatchdogLine w, Path source) {
    switch (w.kind()) {
      case TIMEOUT -> {
        RankEvent.Builder timeout = RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_TIMEOUT)
            .setProcessGroup(w.pgName()).setSeq(w.seq()).setOp(OpTypes.profilingName(w.opType()))
            .setMessage(w.text())
            .setLastEnqueuedSeq(-1).setLastCompletedSeq(-1);
        timeout(timeout);
        if (w.stuckSeconds() >= 0) {
          // Noticed long past its timeout: the watchdog had stopped, tied to this work by its seq.
          queue(timeout.clone().setKind(RankEvent.Kind.WATCHDOG_STUCK));
        }
      }
      case PG_STATUS -> status(w);
      case WATCHDOG_STUCK -> queue(RankEvent.newBuilder().setKind(RankEvent.Kind.WATCHDOG_STUCK)
          .setProcessGroup(w.pgName()).setSeq(-1).setMessage(w.text()).setLastEnqueuedSeq(-1)
          .setLastCompletedSeq(-1));
      case MISMATCH_REPORTED -> queue(RankEvent.newBuilder().setKind(RankEvent.Kind.COLLECTIVE_MISMATCH)
          .setProcessGroup(w.pgName()).setSeq(-1).setOp(OpTypes.profilingName(w.opType())).setMessage(w.text())
          .setLastEnqueuedSeq(-1).setLastCompletedSeq(-1));
      case CUDA_ERROR -> queue(RankEvent.newBuilder().setKind(RankEvent.Kind.CUDA_ERROR)
          .setProcessGroup(w.pgName()).setSeq(-1).setMessage(w.text()).setLastEnqueuedSeq(-1)
          .setLastCompletedSeq(-1));
      // "Received a dump signal": another rank's timeout (reported by that rank), or this rank's own (reported
      // by its timeout line). Either way, nothing new about this rank.
      case DUMP_SIGNAL -> log.debug("rank {}: dump signal in {}: {}", rank, source, w.text());
      default -> { }
    }
  }

  boolean isEmpty() {
    return events.isEmpty();
  }

  /** Takes the oldest event. */
  RankEvent next() {
    return events.removeFirst();
  }

  private void timeout(RankEvent.Builder event) {
    lastTimeoutSeq = event.getSeq();
    queue(event);
  }

  /** The per-group status line: completes the timeout just read, or is a failure of its own. */
  private void status(WatchdogLine w) {
    RankEvent last = events.peekLast();
    if (last != null && last.getKind() == RankEvent.Kind.WATCHDOG_TIMEOUT && last.getSeq() == w.seq()) {
      events.pollLast();
      events.addLast(last.toBuilder().setLastEnqueuedSeq(w.lastEnqueued())
          .setLastCompletedSeq(w.lastCompleted())
          .setProcessGroup(last.getProcessGroup().isEmpty() ? w.pgName() : last.getProcessGroup()).build());
      return;
    }
    if (w.seq() == lastTimeoutSeq) {
      return;
    }
    // Without a timeout line it reports an error the watchdog caught ("either an error or timeout").
    RankEvent.Kind kind = w.text().contains("Timeout at NCCL work") ? RankEvent.Kind.WATCHDOG_TIMEOUT
        : RankEvent.Kind.COMM_ERROR;
    queue(RankEvent.newBuilder().setKind(kind).setProcessGroup(w.pgName()).setSeq(w.seq()).setMessage(w.text())
        .setLastEnqueuedSeq(w.lastEnqueued()).setLastCompletedSeq(w.lastCompleted()));
  }

  private void queue(RankEvent.Builder event) {
    if (events.size() >= capacity) {
      events.removeFirst();
      dropped++;
      log.warn("rank {}: event queue full while the daemon is away; {} oldest event(s) dropped so far", rank,
          dropped);
    }
    events.addLast(event.setTimeNs(clock.millis() * 1_000_000L).build());
  }
}
