package dev.frdiag.proto;

import java.util.regex.Pattern;

/**
 * What every part of frdiag agrees on besides the messages: where a daemon listens unless told otherwise, which
 * job ids it takes, and what its TLS port tells a plaintext client.
 */
public final class Contract {
  /** The daemon's gRPC port unless told otherwise; agents, fr-diagnose and fr-sim look for it there. */
  public static final int DEFAULT_PORT = 50551;

  /** The daemon clients talk to unless told otherwise: one on this machine. */
  public static final String DEFAULT_DAEMON = "127.0.0.1:" + DEFAULT_PORT;

  /**
   * The job ids the daemon takes: they become directory names, so they are restricted to a safe alphabet. Agents
   * check it too, so a bad one fails at start and not on every reconnect.
   */
  public static final Pattern JOB_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

  /** {@link #JOB_ID} in words, for the messages that refuse an id. */
  public static final String JOB_ID_RULE = "use 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit";

  /**
   * What a daemon's TLS port answers each call of a client that speaks plaintext to it, as the description of an
   * UNAVAILABLE status; clients recognise it to say what to do.
   */
  public static final String SPEAKS_TLS = "this port speaks TLS: connect with TLS (--tls-ca)";

  private Contract() {}
}
