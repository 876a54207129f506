package dev.frdiag.agent;

import dev.frdiag.proto.v1.DumpReply;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.ThreadStacks;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The daemon's dump requests one rank is serving: asks the rank's worker server for a snapshot, or, when it cannot
 * give one, writes the rank's debug pipe, once for all that wait together; then answers each with the first dump
 * taken or written since, or, when its time is up, with why none came. A worker server that fails to give its
 * snapshot falls back to the pipe.
 *
 * <p>Not thread-safe: the agent uses it under its lock.
 */
final class DumpTrigger {
  // The agent's logger, so operators keep finding these lines under the name they always had.
  private static final Logger log = LoggerFactory.getLogger(NodeAgent.class);
  /**
   * A dump written this long before the pipe was written still answers the request: file times may be cut to
   * whole seconds, and a rank whose watchdog just timed out has dumped on its own moments before.
   */
  static final long RECENT_DUMP_MILLIS = 1000;

  private final int rank;
  private final AgentSettings settings;
  private final Clock clock;
  private final List<Pending> pending = new ArrayList<>();
  /** When the pending requests were passed on (epoch ms), and what went wrong writing the pipe. */
  private long triggeredAtMillis;
  private String problem;
  /** Whether the pending requests wait for the worker server's snapshot rather than the pipe's dump. */
  private boolean viaServer;
  /** Why the worker server gave no snapshot; null while it may. */
  private String serverProblem;

  /** A pending dump request and when its answer is due. */
  private record Pending(DumpRequest request, long dueNanos, long waitMillis) {}

  /**
   * @param clock tells when the pipe was written, to compare with dump files' modification times
   */
  DumpTrigger(int rank, AgentSettings settings, Clock clock) {
    this.rank = rank;
    this.settings = Objects.requireNonNull(settings, "settings");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  boolean isEmpty() {
    return pending.isEmpty();
  }

  /** Forgets every pending request unanswered. */
  void clear() {
    pending.clear();
  }

  /** Forgets the requests whose answer fell due: they can no longer be answered in time. */
  void expire(long nowNanos) {
    pending.removeIf(p -> nowNanos >= p.dueNanos());
  }

  /**
   * A new request joins the pending ones; the rank is asked only when none was pending.
   *
   * @param askServer asks the rank's worker server for a snapshot; false when it cannot give one
   */
  void add(DumpRequest request, long nowNanos, BooleanSupplier askServer) {
    // Answer before the daemon stops waiting: a fifth of its deadline is left for the reply to travel.
    long deadlineMillis = request.getDeadlineMs() > 0 ? request.getDeadlineMs() - request.getDeadlineMs() / 5
        : Long.MAX_VALUE;
    long waitMillis = Math.max(1, Math.min(settings.dumpWait().toMillis(), deadlineMillis));
    if (pending.isEmpty()) {
      triggeredAtMillis = clock.millis();
      serverProblem = null;
      viaServer = askServer.getAsBoolean();
      problem = viaServer ? null : writePipe(settings.pipe(rank));
    }
    pending.add(new Pending(request, nowNanos + TimeUnit.MILLISECONDS.toNanos(waitMillis), waitMillis));
    log.info("rank {}: daemon asks for a dump (request {}: {}){}", rank, request.getRequestId(),
        request.getReason(), viaServer ? "; worker server asked" : problem == null ? "; pipe written"
        : "; " + problem);
  }

  /** The worker server gave no snapshot: the pending requests wait for a dump through the pipe instead. */
  void serverFailed(String why) {
    if (pending.isEmpty() || !viaServer) {
      return;
    }
    viaServer = false;
    serverProblem = why;
    problem = writePipe(settings.pipe(rank));
    log.warn("rank {}: no snapshot from its worker server: {}; {}", rank, why, problem == null
        ? "pipe written" : problem);
  }

  /**
   * Answers every pending request a fresh dump answers, and those whose time is up with an error; each reply goes
   * to {@code send} in the order the requests came.
   */
  void answer(long nowNanos, DumpFile dump, Consumer<DumpReply> send) {
    if (pending.isEmpty()) {
      return;
    }
    boolean fresh = dump.last() != null && dump.lastModifiedMillis() >= triggeredAtMillis - RECENT_DUMP_MILLIS;
    DumpReply reply = fresh ? reply(dump) : null;
    for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
      Pending p = it.next();
      long id = p.request().getRequestId();
      if (fresh) {
        send.accept(reply.toBuilder().setRequestId(id).build());
        log.info("rank {}: answered request {} with its dump ({} records)", rank, id, reply.getRecordsCount());
        it.remove();
      } else if (nowNanos >= p.dueNanos()) {
        String error = noAnswer(p.waitMillis(), dump);
        send.accept(DumpReply.newBuilder().setRequestId(id).setError(error).build());
        log.warn("rank {}: request {}: {}", rank, id, error);
        it.remove();
      }
    }
  }

  /** Answers every pending request with {@code error} and forgets them. */
  void refuseAll(String error, Consumer<DumpReply> send) {
    for (Pending p : pending) {
      send.accept(DumpReply.newBuilder().setRequestId(p.request().getRequestId()).setError(error).build());
    }
    pending.clear();
  }

  private DumpReply reply(DumpFile dump) {
    DumpReply reply = ReplyBuilder.reply(dump.last(), ReplyBuilder.MAX_REPLY_BYTES);
    if (!dump.lastStacks().equals(ThreadStacks.getDefaultInstance())) {
      reply = reply.toBuilder().setStacks(dump.lastStacks()).build();
    }
    if (reply.getDroppedRecords() > 0) {
      log.warn("rank {}: dump too large for one reply; its {} oldest of {} records left out", rank,
          reply.getDroppedRecords(), dump.last().records().size());
    }
    return reply;
  }

  /**
   * Writes to the rank's debug pipe. Opened read-write and without create: on Linux that never blocks, even
   * when no process reads the pipe (a dead rank), where a write-only open would wait forever; and it never
   * makes a regular file where the pipe should be.
   *
   * @return null when written, else why not
   */
  static String writePipe(Path pipe) {
    if (pipe == null) {
      return "no debug pipe configured (TORCH_NCCL_DEBUG_INFO_PIPE_FILE, NCCL only), so it cannot be asked to dump";
    }
    BasicFileAttributes a = FileVersion.attributes(pipe);
    if (a == null) {
      return "its dump pipe " + pipe + " does not exist (is TORCH_NCCL_DEBUG_INFO_PIPE_FILE set on the job,"
          + " and TORCH_FR_BUFFER_SIZE above 0?)";
    }
    if (!a.isOther()) {
      return pipe + " is not a named pipe";
    }
    try (FileChannel ch = FileChannel.open(pipe, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(new byte[] {'1'}));
      return null;
    } catch (IOException e) {
      return "cannot write its dump pipe " + pipe + ": " + e;
    }
  }

  private String noAnswer(long waitedMillis, DumpFile dump) {
    String unreadable = dump.problemSince(triggeredAtMillis - RECENT_DUMP_MILLIS);
    if (viaServer) {
      return "rank " + rank + " did not answer: no snapshot from its worker server within " + waitedMillis + " ms";
    }
    String why = unreadable != null ? "its dump could not be read: " + unreadable
        : "no dump at " + dump.path() + " within " + waitedMillis + " ms";
    if (serverProblem != null) {
      why = "no snapshot from its worker server (" + serverProblem + "); " + why;
    }
    return problem == null ? "rank " + rank + " did not answer its dump pipe " + settings.pipe(rank) + ": "
        + why : "rank " + rank + " did not answer: " + problem + "; " + why;
  }
}
