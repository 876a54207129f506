package dev.frdiag.readers.nccl;

import static dev.frdiag.readers.nccl.Ascii.allDigits;
import static dev.frdiag.readers.nccl.Ascii.digits;
import static dev.frdiag.readers.nccl.Ascii.isDigit;
import static dev.frdiag.readers.nccl.Ascii.isHostChar;

import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.LocalDateTime;
import java.util.HashMap;
import java.util.Map;

/**
 * The lexer: reads the prefix NCCL's logger puts before every message,
 * {@code [timestamp] host:pid:tid [dev] [file:line] NCCL LEVEL }, and keeps the fields of the current line until the
 * next one. Not thread-safe; one instance per parse, reused for every line.
 *
 * <p>This runs on every line of logs that reach gigabytes, so it uses index arithmetic and no regular expression,
 * and allocates only a host name the first time it is seen. The line is searched for {@code " NCCL "} and the prefix
 * read backwards from there, because launchers and loggers put what they like before it.
 */
final class LinePrefix {
  /** NCCL's debug levels that carry a prefix. */
  enum Level {
    INFO,
    WARN,
    TRACE,
    /** {@code NCCL_DEBUG=API}: {@code host:pid:tid NCCL CALL ncclSend(…)}, without a device. */
    CALL
  }

  /** NCCL formats into a 1,024-byte buffer; a quoted line carries at most this much. */
  static final int MAX_QUOTE = 1024;
  /** A file name and line (TRACE: also a time) longer than this between {@code [dev]} and NCCL is not a prefix. */
  private static final int MAX_LOCATION = 256;

  private final int maxHosts;
  private final String[] hostCache = new String[16];
  private int hostCacheNext;
  private final Map<String, String> hosts = new HashMap<>();
  private final Map<String, Integer> anonymisedPids = new HashMap<>();

  private long lineNumber;
  private String line;
  private boolean latin1;

  private Level level;
  private String host;
  private int pid;
  private int tid;
  private int device;
  private int messageStart;
  private int locationStart;
  private int locationEnd;
  private int noiseEnd;
  private LocalDateTime timestamp;
  private int quoteStart;

  /** {@code maxHosts} bounds the host names interned; more are still read, only not shared. */
  LinePrefix(int maxHosts) {
    this.maxHosts = maxHosts;
  }

  /**
   * Takes the next line, without its terminator, and returns whether it carries an NCCL prefix; only then do the
   * prefix accessors describe it (on other lines the host is empty and the numbers are -1). {@code latin1} says the
   * line was decoded byte for byte from ISO-8859-1 and must be re-decoded as UTF-8 when quoted.
   */
  boolean next(String s, boolean latin1) {
    lineNumber++;
    this.line = s;
    this.latin1 = latin1;
    quoteStart = 0;
    int m = s.indexOf(" NCCL ");
    if (m >= 0 && read(s, m, m + 6)) {
      return true;
    }
    if (m < 0) {
      // NCCL 2.2 and before printed no "NCCL": "host:pid:tid [dev] INFO msg", "… [dev] file.cu:61 WARN msg".
      int old = s.indexOf(" INFO ");
      if (old < 0) {
        old = s.indexOf(" WARN ");
      }
      if (old > 0 && read(s, old, old + 1)) {
        return true;
      }
    }
    unprefixed();
    return false;
  }

  /**
   * Forgets the previous line's prefix: a line without one (PyTorch quoting NCCL's last WARN, a network plugin's
   * own line) must not be taken for a line of the last process that printed one.
   */
  private void unprefixed() {
    host = "";
    pid = -1;
    tid = -1;
    device = -1;
    messageStart = line.length();
    locationStart = -1;
    locationEnd = -1;
    noiseEnd = 0;
    timestamp = null;
  }

  /** Quotes the current line from {@code start} on: the part of a long line that says what an event rests on. */
  void quoteFrom(int start) {
    quoteStart = Math.max(0, Math.min(start, line.length()));
  }

  /** The 1-based number of the current line; every line counts, prefixed or not. */
  long lineNumber() {
    return lineNumber;
  }

  Level level() {
    return level;
  }

  /** The host name, interned: equal hosts are the same instance; empty on a line without a prefix. */
  String host() {
    return host;
  }

  int pid() {
    return pid;
  }

  int tid() {
    return tid;
  }

  /** The CUDA device in {@code [dev]}; not set by CALL lines. */
  int device() {
    return device;
  }

  /** Where the message starts, after {@code "NCCL LEVEL "}; the line's length when the message is empty. */
  int messageStart() {
    return messageStart;
  }

  /** The timestamp NCCL 2.26+ prints before the prefix, or null. */
  LocalDateTime timestamp() {
    return timestamp;
  }

  /** Where the text a launcher or logger put before the prefix (and its timestamp) ends; 0 when there is none. */
  int noiseEnd() {
    return noiseEnd;
  }

  /** The {@code file.cc:line} of WARN and TRACE lines, or empty. */
  String location() {
    return locationStart >= 0 ? line.substring(locationStart, locationEnd).trim() : "";
  }

  /** The current line as printed (UTF-8 restored) from {@link #quoteFrom}, cut to NCCL's own buffer size. */
  String quote() {
    String from = quoteStart == 0 ? line : line.substring(quoteStart);
    String quoted = latin1 ? new String(from.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8) : from;
    return quoted.length() > MAX_QUOTE ? quoted.substring(0, MAX_QUOTE) : quoted;
  }

  /**
   * The rank a launcher tagged the current line with, OpenMPI {@code [job,rank]<stdout>:} or {@code [rank]}, or -1;
   * looks only before {@link #noiseEnd()}.
   */
  int launcherRank() {
    String s = line;
    int i = 0;
    while (i < noiseEnd && s.charAt(i) == ' ') {
      i++;
    }
    if (i >= noiseEnd || s.charAt(i) != '[') {
      return -1;
    }
    int close = s.indexOf(']', i);
    if (close < 0 || close >= noiseEnd || close - i > 24) {
      return -1;
    }
    int comma = s.indexOf(',', i);
    if (comma > 0 && comma < close) {
      // OpenMPI --tag-output: [jobid,rank]<stdout>:
      return s.startsWith("<std", close + 1) && allDigits(s, comma + 1, close) ? (int) digits(s, comma + 1, close)
          : -1;
    }
    return allDigits(s, i + 1, close) ? (int) digits(s, i + 1, close) : -1;
  }

  /**
   * Reads the prefix backwards from {@code m}, the index of the space before {@code "NCCL "} (or before the level
   * where no "NCCL" is printed), the level at {@code at}.
   */
  private boolean read(String s, int m, int at) {
    int n = s.length();
    if (s.startsWith("INFO", at)) {
      level = Level.INFO;
      at += 4;
    } else if (s.startsWith("WARN", at)) {
      level = Level.WARN;
      at += 4;
    } else if (s.startsWith("TRACE", at)) {
      level = Level.TRACE;
      at += 5;
    } else if (s.startsWith("CALL", at)) {
      level = Level.CALL;
      at += 4;
    } else {
      return false;
    }
    if (at < n) {
      if (s.charAt(at) != ' ') {
        return false;
      }
      at++;
    }
    messageStart = at;
    if (level == Level.CALL) {
      return hostPidTid(s, m);
    }
    int close;
    locationStart = -1;
    locationEnd = -1;
    if (m > 0 && s.charAt(m - 1) == ']') {
      close = m - 1;
    } else {
      // WARN and TRACE put "file.cc:line" (TRACE also a time) between [dev] and NCCL.
      close = s.lastIndexOf("] ", m - 1);
      if (close < 0 || m - close > MAX_LOCATION) {
        return false;
      }
      locationStart = close + 2;
      locationEnd = m;
    }
    int open = close - 1;
    while (open >= 0 && isDigit(s.charAt(open))) {
      open--;
    }
    if (open < 0 || open == close - 1 || close - open > 8 || s.charAt(open) != '['
        || open > 0 && s.charAt(open - 1) != ' ') {
      return false;
    }
    device = (int) digits(s, open + 1, close);
    if (s.substring(0, open).isBlank()) {
      // "[0] NCCL INFO …": the poster cut host, pid and tid away; the line is still NCCL's, of a process unknown.
      host = "";
      pid = -1;
      tid = -1;
      timestamp = null;
      noiseEnd = 0;
      return true;
    }
    return hostPidTid(s, open - 1);
  }

  /**
   * Reads {@code host:pid:tid} ending just before {@code end}, then the optional timestamp before it. People who
   * post logs often replace the pid and tid with letters ({@code node1:XXXX:YYYY}); such a line is still NCCL's,
   * its process told apart from others by the letters ({@link #anonymised}).
   */
  private boolean hostPidTid(String s, int end) {
    int i = end - 1;
    while (i >= 0 && isIdChar(s.charAt(i))) {
      i--;
    }
    if (i < 0 || i == end - 1 || end - i > 11 || s.charAt(i) != ':') {
      return false;
    }
    long t = allDigits(s, i + 1, end) ? digits(s, i + 1, end) : -1;
    int pidEnd = i;
    i--;
    while (i >= 0 && isIdChar(s.charAt(i))) {
      i--;
    }
    if (i < 0 || i == pidEnd - 1 || pidEnd - i > 11 || s.charAt(i) != ':') {
      return false;
    }
    long p = allDigits(s, i + 1, pidEnd) ? digits(s, i + 1, pidEnd) : anonymised(s, i + 1, pidEnd);
    int hostEnd = i;
    i--;
    while (i >= 0 && isHostChar(s.charAt(i))) {
      i--;
    }
    int hostStart = i + 1;
    if (hostStart == hostEnd || t > Integer.MAX_VALUE || p > Integer.MAX_VALUE || p < Integer.MIN_VALUE) {
      return false;
    }
    tid = (int) t;
    pid = (int) p;
    host = internHost(s, hostStart, hostEnd);
    timestamp = null;
    noiseEnd = hostStart;
    if (hostStart >= 21 && s.charAt(hostStart - 1) == ' ' && s.charAt(hostStart - 2) == ']') {
      int open = s.lastIndexOf('[', hostStart - 2);
      if (open >= 0) {
        timestamp = timestamp(s, open + 1, hostStart - 2);
        if (timestamp != null) {
          noiseEnd = open;
        }
      }
    }
    return true;
  }

  /** {@code YYYY-MM-DD HH:MM:SS[.fff…]} between {@code from} and {@code to}, or null. */
  private static LocalDateTime timestamp(String s, int from, int to) {
    if (to - from < 19 || s.charAt(from + 4) != '-' || s.charAt(from + 7) != '-' || s.charAt(from + 10) != ' '
        || s.charAt(from + 13) != ':' || s.charAt(from + 16) != ':') {
      return null;
    }
    for (int k : new int[] {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18}) {
      if (!isDigit(s.charAt(from + k))) {
        return null;
      }
    }
    int nanos = 0;
    if (to - from > 20 && s.charAt(from + 19) == '.') {
      int scale = 100_000_000;
      for (int k = from + 20; k < to && scale > 0 && isDigit(s.charAt(k)); k++) {
        nanos += (s.charAt(k) - '0') * scale;
        scale /= 10;
      }
    }
    try {
      return LocalDateTime.of((int) digits(s, from, from + 4), (int) digits(s, from + 5, from + 7),
          (int) digits(s, from + 8, from + 10), (int) digits(s, from + 11, from + 13),
          (int) digits(s, from + 14, from + 16), (int) digits(s, from + 17, from + 19), nanos);
    } catch (DateTimeException e) {
      return null;
    }
  }

  /** A digit or a letter: what a pid or tid is printed as, or replaced with. */
  private static boolean isIdChar(char c) {
    return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }

  /**
   * A stand-in pid for one that was replaced with letters: below -1 (which means "none"), the same for the same
   * letters, so processes anonymised differently stay apart and those anonymised alike are taken as one.
   */
  private long anonymised(String s, int from, int to) {
    String letters = s.substring(from, to);
    Integer known = anonymisedPids.get(letters);
    if (known == null) {
      // Bounded like the hosts: past the bound, further anonymised processes share one stand-in.
      known = Math.min(anonymisedPids.size(), maxHosts);
      if (known < maxHosts) {
        anonymisedPids.put(letters, known);
      }
    }
    return -2 - known;
  }

  private String internHost(String s, int from, int to) {
    int len = to - from;
    for (String h : hostCache) {
      if (h != null && h.length() == len && s.regionMatches(from, h, 0, len)) {
        return h;
      }
    }
    String h = s.substring(from, to);
    if (hosts.size() < maxHosts) {
      h = hosts.computeIfAbsent(h, k -> k);
    }
    hostCache[hostCacheNext++ & (hostCache.length - 1)] = h;
    return h;
  }
}
