package dev.frdiag.collector.recorder;

import dev.frdiag.proto.v1.Frame;
import java.util.List;

/** An interned call stack (innermost frame first) attached to records; get one from {@link FlightRecorder#stack}. */
public final class StackTrace {
  /** Records issued without a stack. */
  static final int NONE = -1;

  final int id;
  private final List<Frame> frames;

  StackTrace(int id, List<Frame> frames) {
    this.id = id;
    this.frames = frames;
  }

  public List<Frame> frames() {
    return frames;
  }
}
