package dev.frdiag.daemon.access;

import java.util.Set;

/**
 * A caller the daemon knows, by a token or a certificate, with the jobs it may write to (stream ranks and node
 * context), read (status, reports, incidents) and operate (trigger a diagnosis). {@code "*"} stands for every job.
 *
 * @param name how logs and errors name the caller (never its token)
 */
public record Principal(String name, Set<String> writer, Set<String> reader, Set<String> operator) {
  static final String ANY = "*";

  /** Everyone, when the daemon runs without an access file. */
  public static final Principal OPEN = new Principal("anyone", Set.of(ANY), Set.of(ANY), Set.of(ANY));

  public Principal {
    writer = Set.copyOf(writer);
    reader = Set.copyOf(reader);
    operator = Set.copyOf(operator);
  }

  public boolean mayWrite(String job) {
    return writer.contains(ANY) || writer.contains(job);
  }

  public boolean mayRead(String job) {
    return reader.contains(ANY) || reader.contains(job);
  }

  public boolean mayOperate(String job) {
    return operator.contains(ANY) || operator.contains(job);
  }
}
