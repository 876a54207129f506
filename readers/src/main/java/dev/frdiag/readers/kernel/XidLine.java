package dev.frdiag.readers.kernel;

import java.util.Objects;

/**
 * One Xid line of a kernel log: {@code NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001
 * caused by previous Xid 149}.
 *
 * @param host the host the syslog or journal prefix names ({@code Mar  3 10:00:01 gpu-12 kernel: …}); empty when
 *     the line has none (dmesg)
 * @param pciBusId the GPU as the driver names it, {@code 0000:dc:00}, lower case
 * @param xid the Xid number
 * @param pid the process whose work it hit; -1 when the line names none ({@code pid='<unknown>'} or older lines)
 * @param process that process's name ({@code name=python3}); empty when the line names none
 * @param previousXid the earlier Xid a cleanup (Xid 45) names as its cause; -1 when the line names none
 * @param text the message after the Xid number, as printed
 * @param source file name and line number, e.g. "kern.log:812"
 */
public record XidLine(String host, String pciBusId, int xid, long pid, String process, int previousXid, String text,
    String source) {
  public XidLine {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(pciBusId, "pciBusId");
    Objects.requireNonNull(process, "process");
    Objects.requireNonNull(text, "text");
    Objects.requireNonNull(source, "source");
  }

  /** What this Xid says about the GPU. */
  public XidKind kind() {
    return XidKind.of(xid);
  }

  /**
   * The Xid that explains this line: the earlier one a cleanup names, else this one. The driver prints Xid 45 on
   * every channel it tears down because of another fault; the fault is what matters.
   */
  public int cause() {
    return kind() == XidKind.SECONDARY && previousXid > 0 ? previousXid : xid;
  }
}
