package dev.frdiag.collector.ring;

/**
 * A reader's reusable copy of one ring slot. Mutable on purpose: readers fill one per pass instead of
 * allocating per record. Ids ({@code processGroup}, {@code op}, {@code inputs}, …) refer to the recorder's
 * intern tables.
 */
public final class RecordView {
  public long recordId;
  public int processGroup;
  public long collectiveSeq;
  public long p2pSeq;
  public long opId;
  public int op;
  public boolean isP2p;
  public int peer;
  public int inputs;
  public int outputs;
  public int stack;
  public int thread;
  public byte state;
  public long timeCreatedNs;
  public long timeStartedNs;
  public long timeCompletedNs;
}
