package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.agent.probe.NodeProbe;
import dev.frdiag.agent.probe.NodeProbes;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The probes' findings reach the node's context, on this node's name, once an investigation has run them. */
class NodeContextProbesTest {
  @Test
  void anXidTheKernelLoggedIsInTheContextPostedAfterTheProbesRan(@TempDir Path dir) throws Exception {
    // A line as the driver prints it (NVIDIA/open-gpu-kernel-modules#1150), with the pid of the rank's process.
    Path exe = dir.resolve("dmesg");
    Files.writeString(exe, "#!/bin/sh\necho '[ 812.1] NVRM: Xid (PCI:0000:dc:00): 79, pid=4242, name=python3, "
        + "GPU has fallen off the bus.'\n");
    Files.setPosixFilePermissions(exe, PosixFilePermissions.fromString("rwx------"));
    NodeContextCollector context = new NodeContextCollector(null, List.of(), Duration.ofMinutes(1),
        new NodeProbes(List.of(new NodeProbe("dmesg", List.of(exe.toString()))), Duration.ofSeconds(10)));

    assertThat(context.collect("j", "node01", Duration.ofMinutes(5)).getFindingsList()).isEmpty();
    CountDownLatch ran = new CountDownLatch(1);
    context.probeNow(ran::countDown);
    assertThat(ran.await(10, TimeUnit.SECONDS)).isTrue();

    NodeContext node = context.collect("j", "node01", Duration.ofMinutes(5));
    assertThat(node.getFindingsList()).anySatisfy(f -> {
      assertThat(f.getKind()).isEqualTo(ContextFinding.Kind.XID_DEVICE_FAULT);
      assertThat(f.getHost()).isEqualTo("node01");
      assertThat(f.getPid()).isEqualTo(4242);
      assertThat(f.getGpuBusId()).isEqualTo("0000:dc:00");
    });
    // Only the job's own processes: the kernel log keeps other jobs' faults since boot.
    assertThat(context.collect("j", "node01", Duration.ofMinutes(5), java.util.Set.of(7L)).getFindingsList())
        .noneSatisfy(f -> assertThat(f.getPid()).isEqualTo(4242));
    assertThat(context.collect("j", "node01", Duration.ofMinutes(5), java.util.Set.of(4242L)).getFindingsList())
        .anySatisfy(f -> assertThat(f.getPid()).isEqualTo(4242));
    context.close();
  }
}
