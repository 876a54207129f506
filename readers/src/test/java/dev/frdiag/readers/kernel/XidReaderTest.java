package dev.frdiag.readers.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class XidReaderTest {
  @Test
  void readsTheGpuTheProcessAndTheCauseACleanupNames() {
    XidLine x = XidReader.parse("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 "
        + "caused by previous Xid 149", "kern.log:1");

    assertThat(x).isEqualTo(new XidLine("", "0000:dc:00", 45, 1818990, "python3", 149,
        "pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149", "kern.log:1"));
    assertThat(x.kind()).isEqualTo(XidKind.SECONDARY);
    assertThat(x.cause()).isEqualTo(149);
    assertThat(XidKind.of(x.cause())).isEqualTo(XidKind.DEVICE);
  }

  @Test
  void readsTheHostOfSyslogAndJournalLinesAndNoneFromDmesg() {
    assertThat(XidReader.parse("May  6 00:38:27 alex kernel: [ 4909.922970] NVRM: Xid (0000:01:00): 13, 0005 "
        + "00000000 0000502d 00000104 00000000 00000100", "syslog:7"))
        .extracting(XidLine::host, XidLine::pciBusId, XidLine::xid, XidLine::pid, XidLine::previousXid)
        .containsExactly("alex", "0000:01:00", 13, -1L, -1);
    assertThat(XidReader.parse("2024-10-01T13:00:00+0000 gpu-12 kernel: NVRM: Xid (PCI:0000:3B:00.0): 79, "
        + "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "journal:2"))
        .extracting(XidLine::host, XidLine::pciBusId, XidLine::xid, XidLine::pid, XidLine::process)
        .containsExactly("gpu-12", "0000:3b:00", 79, -1L, "");
    assertThat(XidReader.parse("[Tue Oct  1 13:00:00 2024] NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper:"
        + " New row marked for remapping, reset gpu to activate.", "dmesg:3"))
        .extracting(XidLine::host, XidLine::pid, XidLine::process).containsExactly("", 1896L, "");
    assertThat(XidReader.parse("May  6 00:38:27 kernel: NVRM: Xid (PCI:0000:10:1c): 31, pid=1, name=x, fault",
        "syslog:4").host()).isEmpty();
  }

  @Test
  void skipsWhatIsNoXidLine() {
    assertThat(XidReader.parse("kernel: NVRM: GPU at PCI:0000:01:00: GPU-bc0fa0b9", "k:1")).isNull();
    assertThat(XidReader.parse("NVRM: Xid (something else): 45", "k:2")).isNull();
  }

  @Test
  void classifiesXidsAfterNvidiasCatalog() {
    assertThat(XidKind.of(13)).isEqualTo(XidKind.APPLICATION);
    assertThat(XidKind.of(31)).isEqualTo(XidKind.APPLICATION);
    assertThat(XidKind.of(43)).isEqualTo(XidKind.APPLICATION);
    assertThat(XidKind.of(45)).isEqualTo(XidKind.SECONDARY);
    for (int device : new int[] {48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 145, 149}) {
      assertThat(XidKind.of(device)).as("Xid " + device).isEqualTo(XidKind.DEVICE);
    }
    assertThat(XidKind.of(68)).isEqualTo(XidKind.OTHER);
    assertThat(XidKind.describe(149)).isEqualTo("Xid 149 (NVLink NETIR error)");
    assertThat(XidKind.describe(999)).isEqualTo("Xid 999");
  }
}
