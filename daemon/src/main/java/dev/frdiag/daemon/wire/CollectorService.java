package dev.frdiag.daemon.wire;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.daemon.access.Access;
import dev.frdiag.daemon.metrics.DaemonMetrics;
import dev.frdiag.daemon.registry.ClaimRefusedException;
import dev.frdiag.daemon.registry.Job;
import dev.frdiag.daemon.registry.JobRegistry;
import dev.frdiag.daemon.registry.LimitExceededException;
import dev.frdiag.daemon.registry.RankLink;
import dev.frdiag.daemon.registry.TemplateTable;
import dev.frdiag.proto.v1.CollectorConfig;
import dev.frdiag.proto.v1.CollectorGrpc;
import dev.frdiag.proto.v1.ContextAck;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.DumpRequest;
import dev.frdiag.proto.v1.Hello;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.NodeDownload;
import dev.frdiag.proto.v1.NodeUpload;
import dev.frdiag.proto.v1.ProcessGroup;
import dev.frdiag.proto.v1.RankIdentity;
import dev.frdiag.proto.v1.RankMessage;
import dev.frdiag.proto.v1.Welcome;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Collector service: one stream per rank. Translates messages into registry updates; a rank that sends
 * something invalid gets INVALID_ARGUMENT on its own stream and nothing else is affected.
 */
public final class CollectorService extends CollectorGrpc.CollectorImplBase {
  private static final Logger log = LoggerFactory.getLogger(CollectorService.class);
  /** How many of a stream's newest dump requests it remembers having sent; gathers of one job run a few at most. */
  private static final int RECENT_REQUESTS = 8;

  private final JobRegistry registry;
  private final CollectorConfig config;
  private final int maxMessageBytes;
  private final LongSupplier nanoTime;
  private final LongSupplier millis;
  private final DaemonMetrics metrics;

  public CollectorService(JobRegistry registry, CollectorConfig config,
      int maxMessageBytes, LongSupplier nanoTime, LongSupplier millis, DaemonMetrics metrics) {
    this.metrics = metrics;
    this.registry = registry;
    // This service reads records by template, whatever the caller's config says.
    this.config = config.toBuilder().setRecordTemplates(true).build();
    this.maxMessageBytes = maxMessageBytes;
    this.nanoTime = nanoTime;
    this.millis = millis;
  }

  @Override
  public void reportContext(NodeContext node, StreamObserver<ContextAck> out) {
    try {
      Access.requireWriter(node.getJobId());
    } catch (StatusRuntimeException e) {
      metrics.accessDenied("not_writer");
      out.onError(e);
      return;
    }
    if (registry.find(node.getJobId()).filter(j -> !j.admitWriter(Access.writer())).isPresent()) {
      metrics.accessDenied("not_job_writer");
      out.onError(notJobWriter(node.getJobId()));
      return;
    }
    try {
      MessageValidator.context(node);
    } catch (IllegalArgumentException e) {
      metrics.messageRejected(Status.Code.INVALID_ARGUMENT.name());
      out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    try {
      registry.context(node, nanoTime.getAsLong());
    } catch (LimitExceededException e) {
      metrics.messageRejected(Status.Code.RESOURCE_EXHAUSTED.name());
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    log.debug("job={} host={} posted {} context findings", node.getJobId(), node.getHostname(),
        node.getFindingsCount());
    out.onNext(ContextAck.getDefaultInstance());
    out.onCompleted();
  }

  private static StatusRuntimeException notJobWriter(String job) {
    return Status.PERMISSION_DENIED.withDescription("job '" + job + "' is bound to the writers that registered its "
        + "ranks, and none of its ranks is connected: only they may write it again").asRuntimeException();
  }

  @Override
  public StreamObserver<RankMessage> connect(StreamObserver<DaemonMessage> responses) {
    ServerCallStreamObserver<DaemonMessage> call = (ServerCallStreamObserver<DaemonMessage>) responses;
    counted(call, "rank");
    return open(RankOutbound.of(call));
  }

  @Override
  public StreamObserver<NodeUpload> connectNode(StreamObserver<NodeDownload> responses) {
    ServerCallStreamObserver<NodeDownload> call = (ServerCallStreamObserver<NodeDownload>) responses;
    counted(call, "node");
    return new NodeSession(call, this::open);
  }

  /** Counts the call in frdiag_streams until it ends, whichever way: closed by either side or cancelled. */
  private void counted(ServerCallStreamObserver<?> call, String kind) {
    metrics.streamOpened(kind);
    AtomicBoolean open = new AtomicBoolean(true);
    Runnable ended = () -> {
      if (open.getAndSet(false)) {
        metrics.streamClosed(kind);
      }
    };
    call.setOnCancelHandler(ended);
    call.setOnCloseHandler(ended);
  }

  /** A rank stream whose replies go to {@code out}: what a Connect call, or one rank frame of a node, is served by. */
  StreamObserver<RankMessage> open(RankOutbound out) {
    return new Session(out);
  }

  /**
   * Per-stream state. gRPC delivers one inbound message at a time, so job and identity need no lock; only
   * {@code ended} is shared with the investigation threads that send dump requests.
   */
  private final class Session implements StreamObserver<RankMessage>, RankLink {
    private final RankOutbound out;
    private final String id = UUID.randomUUID().toString();
    private Job job;
    private RankIdentity identity;
    /** Templates sent on this stream; gRPC delivers one message at a time, so no lock. */
    private final TemplateTable templates = new TemplateTable();
    @GuardedBy("this")
    private boolean ended;
    /** Whether the Welcome went out: nothing may reach the rank before it. */
    @GuardedBy("this")
    private boolean welcomed;
    /** Dump requests asked for before the Welcome went out, sent right after it. */
    @GuardedBy("this")
    private final List<DumpRequest> heldUntilWelcome = new ArrayList<>(1);
    /**
     * The ids of the newest dump requests sent on this stream. A gather asks every linked rank, and a rank whose
     * stream attaches meanwhile is asked on it by its job ({@link Job#attach}): both may reach one stream, and a rank
     * asked twice would take and send a second full snapshot for nothing.
     */
    @GuardedBy("this")
    private final Deque<Long> requestsSent = new ArrayDeque<>();

    Session(RankOutbound out) {
      this.out = out;
    }

    @Override
    public void onNext(RankMessage message) {
      synchronized (this) {
        if (ended) {
          return;
        }
      }
      int size = message.getSerializedSize();
      if (size > maxMessageBytes) {
        fail(Status.RESOURCE_EXHAUSTED.withDescription(message.getBodyCase() + " message of " + size
            + " bytes exceeds the daemon's limit of " + maxMessageBytes + " bytes; send smaller batches"));
        return;
      }
      try {
        handle(message);
      } catch (IllegalArgumentException e) {
        fail(Status.INVALID_ARGUMENT.withDescription(e.getMessage()));
      } catch (LimitExceededException e) {
        fail(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()));
      } catch (StatusRuntimeException e) {
        // Access refused (and counted where refused): the caller is not a writer of the job it names.
        fail(e.getStatus());
      } catch (ClaimRefusedException e) {
        // Retryable for the client: once the live stream (or the live shape) is gone, the same Hello is accepted.
        fail((e.conflict() == ClaimRefusedException.Conflict.RANK_IN_USE ? Status.ALREADY_EXISTS : Status.ABORTED)
            .withDescription(e.getMessage()));
      }
    }

    private void handle(RankMessage message) {
      long now = nanoTime.getAsLong();
      if (identity == null) {
        if (message.getBodyCase() != RankMessage.BodyCase.HELLO) {
          throw new IllegalArgumentException("the first message of a stream must be a Hello, got "
              + message.getBodyCase());
        }
        hello(message.getHello(), now);
        return;
      }
      int rank = identity.getGlobalRank();
      switch (message.getBodyCase()) {
        case HEARTBEAT -> {
          long nowMs = millis.getAsLong();
          if (message.getHeartbeat().getSentAtNs() > 0) {
            metrics.heartbeatTaken(message.getHeartbeat().getSentAtNs() / 1_000_000, nowMs);
          }
          job.heartbeat(rank, id, message.getHeartbeat().getProgressList(),
              message.getHeartbeat().getDroppedRecords(), message.getHeartbeat().getSentAtNs(),
              message.getHeartbeat().getRecordsCurrent(), now, nowMs);
        }
        case RECORDS -> job.records(rank, id, message.getRecords(), templates, now);
        case PROCESS_GROUPS -> {
          MessageValidator.groups(message.getProcessGroups().getProcessGroupsList(), identity, job::holdsGroup);
          job.addGroups(rank, id, message.getProcessGroups().getProcessGroupsList(), now);
        }
        case EVENT -> {
          MessageValidator.event(message.getEvent());
          log.warn("job={} rank={} reported {}: {}", job.id(), rank, message.getEvent().getKind(),
              MessageValidator.abbreviate(message.getEvent().getMessage()));
          job.event(rank, id, message.getEvent(), now);
        }
        case DUMP_REPLY -> {
          MessageValidator.dumpReply(message.getDumpReply());
          job.dumpReply(rank, id, message.getDumpReply());
        }
        case GOODBYE -> {
          job.finished(rank, id);
          synchronized (this) {
            ended = true;
          }
          log.info("job={} rank={} said goodbye: {}", job.id(), rank, message.getGoodbye().getReason());
        }
        case HELLO -> throw new IllegalArgumentException("a stream carries one Hello; open a new stream instead");
        default -> throw new IllegalArgumentException("empty or unknown message body");
      }
    }

    private void hello(Hello hello, long now) {
      // The job's groups passed these checks before; the job is not created until the Hello passed them.
      Predicate<ProcessGroup> known = hello.hasIdentity()
          ? registry.find(hello.getIdentity().getJobId()).<Predicate<ProcessGroup>>map(j -> j::holdsGroup)
              .orElse(g -> false)
          : g -> false;
      MessageValidator.hello(hello, known);
      RankIdentity who = hello.getIdentity();
      // Before the job exists: a stranger can neither create a job nor fix its shape.
      try {
        Access.requireWriter(who.getJobId());
      } catch (StatusRuntimeException e) {
        metrics.accessDenied("not_writer");
        throw e;
      }
      Job j = registry.getOrCreate(who.getJobId(), who.getWorldSize(), millis.getAsLong(), now);
      // Before the rank is taken or the shape compared: an ended job's ranks are not anybody's to claim.
      if (!j.admitWriter(Access.writer())) {
        metrics.accessDenied("not_job_writer");
        throw notJobWriter(who.getJobId());
      }
      j.attach(who, hello.getProcessGroupsList(), this, id, hello.getDroppedRecords(), now, millis.getAsLong());
      j.scheduler(hello.getSchedulerMap());
      this.job = j;
      this.identity = who;
      synchronized (this) {
        send(DaemonMessage.newBuilder().setWelcome(Welcome.newBuilder().setSessionId(id).setConfig(config)).build());
        welcomed = true;
        heldUntilWelcome.forEach(this::requestDump);
        heldUntilWelcome.clear();
      }
      log.debug("job={} rank={} host={} pid={} connected", who.getJobId(), who.getGlobalRank(),
          who.getHostname(), who.getPid());
    }

    @Override
    public synchronized void requestDump(DumpRequest request) {
      if (!welcomed) {
        // Linked to its job before the Welcome is sent (its job asks it at once while a gather runs): the request
        // waits for the Welcome, which the rank must see first.
        heldUntilWelcome.add(request);
        return;
      }
      if (requestsSent.contains(request.getRequestId())) {
        return;
      }
      requestsSent.addLast(request.getRequestId());
      if (requestsSent.size() > RECENT_REQUESTS) {
        requestsSent.removeFirst();
      }
      send(DaemonMessage.newBuilder().setDumpRequest(request).build());
    }

    private void send(DaemonMessage message) {
      synchronized (this) {
        if (ended || out.isCancelled()) {
          return;
        }
        try {
          out.send(message);
        } catch (RuntimeException e) {
          // The call was cancelled between the check and the send; the stream is gone.
          ended = true;
        }
      }
    }

    private void fail(Status status) {
      synchronized (this) {
        if (ended) {
          return;
        }
        ended = true;
      }
      log.warn("rejected stream from {}: {}", who(), status.getDescription());
      metrics.messageRejected(status.getCode().name());
      if (job != null) {
        job.lost(identity.getGlobalRank(), id, nanoTime.getAsLong());
      }
      try {
        out.fail(status);
      } catch (RuntimeException ignored) {
        // Already cancelled by the peer.
      }
    }

    private String who() {
      return identity == null ? "unidentified rank" : "job=" + identity.getJobId() + " rank="
          + identity.getGlobalRank();
    }

    @Override
    public void onError(Throwable t) {
      boolean wasEnded;
      synchronized (this) {
        wasEnded = ended;
        ended = true;
      }
      if (!wasEnded && job != null) {
        log.warn("job={} rank={} stream lost: {}", job.id(), identity.getGlobalRank(), Status.fromThrowable(t));
        job.lost(identity.getGlobalRank(), id, nanoTime.getAsLong());
      }
    }

    @Override
    public void onCompleted() {
      boolean wasEnded;
      synchronized (this) {
        wasEnded = ended;
        ended = true;
      }
      if (!wasEnded && job != null) {
        // Half-close without Goodbye: treat like a lost stream, the rank did not say it was done.
        job.lost(identity.getGlobalRank(), id, nanoTime.getAsLong());
      }
      try {
        out.complete();
      } catch (RuntimeException ignored) {
        // Peer already gone.
      }
    }
  }
}
