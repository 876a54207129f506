package dev.frdiag.readers.kernel;

/** The host a syslog or journal line names before its tag: {@code Mar  3 10:00:01 gpu-12 kernel: …}. */
public final class SyslogHost {
  private SyslogHost() {}

  /**
   * The host before {@code kernel:} when a timestamp precedes it, else empty (dmesg prints no host). Looks only
   * before {@code end}, where the kernel's own message starts.
   */
  public static String of(String line, int end) {
    int tag = line.lastIndexOf("kernel:", end);
    if (tag <= 0) {
      return "";
    }
    String before = line.substring(0, tag).trim();
    int space = before.lastIndexOf(' ');
    if (space < 0) {
      return "";
    }
    String host = before.substring(space + 1);
    // "May  6 00:38:27 kernel:" has no host; a bracketed uptime is no host either.
    boolean hostLike = !host.isEmpty() && host.chars().allMatch(c -> Character.isLetterOrDigit(c) || c == '-'
        || c == '.' || c == '_');
    return hostLike && before.substring(0, space).chars().anyMatch(Character::isDigit) ? host : "";
  }
}
