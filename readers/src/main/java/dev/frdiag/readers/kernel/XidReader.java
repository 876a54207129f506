package dev.frdiag.readers.kernel;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the NVIDIA driver's Xid lines from kernel logs in the forms dmesg, journalctl and syslog print them, with
 * or without the {@code kernel:} tag and timestamps, one line at a time; other lines are no Xid line, and content
 * it does not know never makes it fail.
 */
public final class XidReader {
  /** {@code NVRM: Xid (PCI:0000:dc:00): 45, …}; drivers before ~2015 print the bus id without {@code PCI:}. */
  private static final Pattern XID = Pattern.compile(
      "NVRM: Xid \\((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\\.[0-7])?)\\): (\\d{1,4}),\\s*(.*)");
  private static final Pattern PID = Pattern.compile("\\bpid=(\\d{1,10})\\b");
  private static final Pattern NAME = Pattern.compile("\\bname=([^,\\s]+)");
  private static final Pattern PREVIOUS = Pattern.compile("caused by previous Xid (\\d{1,4})");

  private XidReader() {}

  /** The Xid line {@code line} is, or null when it is not one. */
  public static XidLine parse(String line, String source) {
    int at = line.indexOf("NVRM: Xid");
    if (at < 0) {
      return null;
    }
    Matcher m = XID.matcher(line).region(at, line.length());
    if (!m.matches()) {
      return null;
    }
    String text = m.group(3).trim();
    Matcher pid = PID.matcher(text);
    Matcher name = NAME.matcher(text);
    Matcher previous = PREVIOUS.matcher(text);
    String process = name.find() && !name.group(1).contains("unknown") ? name.group(1) : "";
    return new XidLine(SyslogHost.of(line, at), busId(m.group(1)), Integer.parseInt(m.group(2)),
        pid.find() ? Long.parseLong(pid.group(1)) : -1, process,
        previous.find() ? Integer.parseInt(previous.group(1)) : -1, text, source);
  }

  /** {@code 0000:dc:00}, lower case and without a function number, as the driver prints it nowadays. */
  private static String busId(String printed) {
    String id = printed.toLowerCase(Locale.ROOT);
    int dot = id.indexOf('.');
    return dot < 0 ? id : id.substring(0, dot);
  }
}
