package dev.frdiag.proto;

import dev.frdiag.proto.v1.StreamClosed;
import io.grpc.Status;

/** A rank stream's end on a node stream ({@link StreamClosed}) and the gRPC status it stands for, both ways. */
public final class StreamEnds {
  private StreamEnds() {}

  /** {@code status} as a node stream frame carries it: code 0 for a clean half-close. */
  public static StreamClosed closed(Status status) {
    return StreamClosed.newBuilder().setCode(status.getCode().value())
        .setDescription(status.getDescription() == null ? "" : status.getDescription()).build();
  }

  /** The status a frame's {@code closed} stands for. */
  public static Status status(StreamClosed closed) {
    return Status.fromCodeValue(closed.getCode()).withDescription(closed.getDescription());
  }
}
