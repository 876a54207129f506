package dev.frdiag.collector.recorder;

/** An interned operation name ("all_reduce", "send", …); get one from {@link FlightRecorder#op}. */
public final class OpName {
  final int id;
  private final String name;
  final boolean p2p;

  OpName(int id, String name) {
    this.id = id;
    this.name = name;
    this.p2p = name.equals("send") || name.equals("recv");
  }

  public String name() {
    return name;
  }

  @Override
  public String toString() {
    return name;
  }
}
