package dev.frdiag.readers.ib;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IbSysfsReaderTest {
  @TempDir
  Path dir;

  private FakeSysfs sysfs;

  @BeforeEach
  void copyTree() throws Exception {
    sysfs = FakeSysfs.copyTo(dir);
  }

  @Test
  void readsStateRateAndEveryCounterOfEveryPort() {
    IbSnapshot s = sysfs.reader().snapshot();

    assertThat(FakeSysfs.devices(s)).containsExactly("mlx5_0:1", "mlx5_1:1");
    assertThat(s.takenAt()).isEqualTo(sysfs.clock.instant());
    assertThat(s.notes()).isEmpty();
    IbPortSnapshot ib = s.ports().get(new IbPortId("mlx5_0", 1));
    assertThat(ib.state()).isEqualTo("4: ACTIVE");
    assertThat(ib.portState()).isEqualTo(IbPortState.ACTIVE);
    assertThat(ib.physState()).isEqualTo("5: LinkUp");
    assertThat(ib.physicalState()).isEqualTo(IbPhysState.LINK_UP);
    assertThat(ib.up()).isTrue();
    assertThat(ib.rate()).isEqualTo("100 Gb/sec (4X EDR)");
    assertThat(ib.linkLayer()).isEqualTo("InfiniBand");
    assertThat(ib.counters()).hasSize(21).containsEntry("port_xmit_wait", 22_730_501L)
        .containsEntry("port_xmit_data", 36_298_026_860_928L).containsEntry("VL15_dropped", 0L);
    assertThat(ib.hwCountersPresent()).isTrue();
    assertThat(ib.hwCounter("rx_write_requests")).hasValue(987_654L);
    assertThat(ib.notes()).isEmpty();
  }

  @Test
  void notesAMissingHwCountersDirectoryAndAnNaCounter() {
    IbPortSnapshot roce = sysfs.reader().snapshot().ports().get(new IbPortId("mlx5_1", 1));

    assertThat(roce.linkLayer()).isEqualTo("Ethernet");
    assertThat(roce.hwCountersPresent()).isFalse();
    assertThat(roce.hwCounters()).isEmpty();
    assertThat(roce.counter("VL15_dropped")).isEmpty();
    assertThat(roce.counter("symbol_error")).hasValue(3);
    assertThat(roce.notes()).containsExactly("counters/VL15_dropped: N/A (no PMA)", "hw_counters: missing");
  }

  @Test
  void anUnreadableFileIsANoteAndTheOtherPortsAreStillRead() throws Exception {
    sysfs.makeUnreadable("mlx5_0/ports/1/counters/symbol_error").makeUnreadable("mlx5_0/ports/1/state");

    IbSnapshot s = sysfs.reader().snapshot();

    IbPortSnapshot ib = s.ports().get(new IbPortId("mlx5_0", 1));
    assertThat(ib.counter("symbol_error")).isEmpty();
    assertThat(ib.counter("link_downed")).hasValue(0);
    assertThat(ib.state()).isEmpty();
    assertThat(ib.portState()).isEqualTo(IbPortState.UNKNOWN);
    assertThat(ib.notes()).hasSize(2).allMatch(n -> n.contains(": unreadable ("));
    assertThat(ib.notes().get(0)).startsWith("state: unreadable (IOException");
    assertThat(s.ports()).containsKey(new IbPortId("mlx5_1", 1));
  }

  @Test
  void aMissingRootIsAnEmptySnapshotWithANote() {
    IbSnapshot s = new IbSysfsReader(dir.resolve("nothing"), sysfs.clock).snapshot();

    assertThat(s.ports()).isEmpty();
    assertThat(s.notes()).containsExactly(dir.resolve("nothing") + ": missing (no RDMA device, or the driver is not"
        + " loaded)");
  }

  @Test
  void ordersDevicesByTheirNumber() {
    assertThat(new IbPortId("mlx5_2", 1)).isLessThan(new IbPortId("mlx5_10", 1));
    assertThat(new IbPortId("mlx5_2", 1)).isLessThan(new IbPortId("mlx5_2", 2));
    assertThat(new IbPortId("hfi1_0", 1)).isLessThan(new IbPortId("mlx5_0", 1));
  }

  @Test
  void parsesStatesByNumber() {
    assertThat(IbPortState.parse("1: DOWN")).isEqualTo(IbPortState.DOWN);
    assertThat(IbPortState.parse("garbage")).isEqualTo(IbPortState.UNKNOWN);
    assertThat(IbPhysState.parse("3: Disabled")).isEqualTo(IbPhysState.DISABLED);
    assertThat(IbPhysState.parse("6: LinkErrorRecovery")).isEqualTo(IbPhysState.LINK_ERROR_RECOVERY);
    assertThat(IbPhysState.parse("")).isEqualTo(IbPhysState.UNKNOWN);
  }
}
