package dev.frdiag.daemon.wire;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.proto.StreamEnds;
import dev.frdiag.proto.v1.DaemonFrame;
import dev.frdiag.proto.v1.DaemonMessage;
import dev.frdiag.proto.v1.NodeDownload;
import dev.frdiag.proto.v1.NodeUpload;
import dev.frdiag.proto.v1.RankFrame;
import dev.frdiag.proto.v1.RankMessage;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node stream: the rank streams a node relay carries on it, each served exactly as its own Connect call would
 * be. A rank stream the daemon ends stays known until the relay closes it too, so frames already in flight for it
 * are dropped rather than read as a new stream without a Hello.
 */
final class NodeSession implements StreamObserver<NodeUpload> {
  private static final Logger log = LoggerFactory.getLogger(NodeSession.class);

  /** Rank streams one node stream may carry at once: a node hosts tens of ranks, never a thousand. */
  static final int MAX_STREAMS = 1024;

  private final ServerCallStreamObserver<NodeDownload> out;
  private final Function<RankOutbound, StreamObserver<RankMessage>> open;
  /** Touched only by gRPC's inbound callbacks, which come one at a time. */
  private final Map<Integer, StreamObserver<RankMessage>> streams = new HashMap<>();
  @GuardedBy("out")
  private boolean ended;

  NodeSession(ServerCallStreamObserver<NodeDownload> out, Function<RankOutbound, StreamObserver<RankMessage>> open) {
    this.out = out;
    this.open = open;
  }

  @Override
  public void onNext(NodeUpload upload) {
    for (RankFrame frame : upload.getFramesList()) {
      int id = frame.getStream();
      switch (frame.getBodyCase()) {
        case MESSAGE -> {
          StreamObserver<RankMessage> rank = streams.get(id);
          if (rank == null) {
            if (streams.size() >= MAX_STREAMS) {
              deliver(id, closed(Status.RESOURCE_EXHAUSTED.withDescription("a node stream carries at most "
                  + MAX_STREAMS + " rank streams at once")));
              continue;
            }
            rank = open.apply(new FrameOutbound(id));
            streams.put(id, rank);
          }
          try {
            rank.onNext(frame.getMessage());
          } catch (RuntimeException e) {
            // A fault serving one rank must not end the node stream, and with it every other rank of the node.
            log.error("node stream: rank stream {} failed", id, e);
            deliver(id, closed(Status.INTERNAL.withDescription("the daemon failed to handle this stream's "
                + frame.getMessage().getBodyCase() + ": " + e)));
          }
        }
        case CLOSED -> {
          StreamObserver<RankMessage> rank = streams.remove(id);
          if (rank == null) {
            continue;
          }
          Status status = StreamEnds.status(frame.getClosed());
          if (status.isOk()) {
            rank.onCompleted();
          } else {
            rank.onError(status.asRuntimeException());
          }
        }
        default -> log.debug("node stream: frame for rank stream {} with no body, ignored", id);
      }
    }
  }

  @Override
  public void onError(Throwable t) {
    end();
    // Every rank on the node is lost with it: the daemon can no longer reach any of them.
    List<StreamObserver<RankMessage>> ranks = new ArrayList<>(streams.values());
    streams.clear();
    for (StreamObserver<RankMessage> rank : ranks) {
      rank.onError(t);
    }
  }

  @Override
  public void onCompleted() {
    List<StreamObserver<RankMessage>> ranks = new ArrayList<>(streams.values());
    streams.clear();
    for (StreamObserver<RankMessage> rank : ranks) {
      rank.onCompleted();
    }
    end();
    try {
      out.onCompleted();
    } catch (RuntimeException ignored) {
      // The relay has already gone.
    }
  }

  private void end() {
    synchronized (out) {
      ended = true;
    }
  }

  private void deliver(int stream, DaemonFrame.Builder frame) {
    synchronized (out) {
      if (ended || out.isCancelled()) {
        return;
      }
      out.onNext(NodeDownload.newBuilder().addFrames(frame.setStream(stream)).build());
    }
  }

  private static DaemonFrame.Builder closed(Status status) {
    return DaemonFrame.newBuilder().setClosed(StreamEnds.closed(status));
  }

  /** One rank stream's replies, as frames on the node stream. */
  private final class FrameOutbound implements RankOutbound {
    private final int stream;

    FrameOutbound(int stream) {
      this.stream = stream;
    }

    @Override
    public void send(DaemonMessage message) {
      deliver(stream, DaemonFrame.newBuilder().setMessage(message));
    }

    @Override
    public void fail(Status status) {
      deliver(stream, closed(status));
    }

    @Override
    public void complete() {
      deliver(stream, closed(Status.OK));
    }

    @Override
    public boolean isCancelled() {
      synchronized (out) {
        return ended || out.isCancelled();
      }
    }
  }
}
