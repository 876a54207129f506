package dev.frdiag.readers.context;

import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.readers.exit.ProcessExitReader;
import dev.frdiag.readers.gpu.NvidiaSmiReader;
import dev.frdiag.readers.kernel.XidLine;
import dev.frdiag.readers.kernel.XidReader;
import dev.frdiag.readers.nccltests.NcclTestsReader;
import dev.frdiag.readers.horovod.StallInspectorReader;
import dev.frdiag.readers.progress.StepProgressReader;
import dev.frdiag.readers.pytorch.CollectiveErrorReader;
import dev.frdiag.readers.pytorch.DesyncReportReader;
import dev.frdiag.readers.ras.RasReportReader;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What the lines of a text file that are neither NCCL's nor PyTorch's watchdog's say about the job's nodes: the
 * driver's Xid lines, processes that died (launchers, the OOM killer), NCCL RAS reports and {@code nvidia-smi -q}'s
 * memory health, read in one pass.
 */
public final class NodeLogs {
  /** Lines longer than this are cut before matching, as a glued progress bar must not cost a pass per MB. */
  static final int MAX_LINE = 8192;

  private NodeLogs() {}

  /**
   * The node contexts of {@code file}'s kernel, launcher and RAS lines; empty when it has none. Undecodable bytes
   * are replaced, not fatal.
   *
   * @throws IOException when the file cannot be read
   */
  public static List<NodeContext> read(String jobId, Path file) throws IOException {
    var decoder = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
        .onUnmappableCharacter(CodingErrorAction.REPLACE);
    try (BufferedReader in = new BufferedReader(new InputStreamReader(Files.newInputStream(file), decoder))) {
      return read(jobId, in, file.getFileName().toString());
    }
  }

  /**
   * The node contexts of the kernel, launcher and RAS lines read from {@code in} (a command's output, say);
   * {@code name} labels their sources ("name:line").
   *
   * @throws IOException when {@code in} cannot be read
   */
  public static List<NodeContext> read(String jobId, BufferedReader in, String name) throws IOException {
    List<XidLine> xids = new ArrayList<>();
    ProcessExitReader exits = new ProcessExitReader();
    RasReportReader ras = new RasReportReader();
    NvidiaSmiReader smi = new NvidiaSmiReader();
    NcclTestsReader ncclTests = new NcclTestsReader();
    CollectiveErrorReader collectiveErrors = new CollectiveErrorReader();
    StepProgressReader steps = new StepProgressReader();
    StallInspectorReader horovod = new StallInspectorReader();
    DesyncReportReader desync = new DesyncReportReader();
    int number = 0;
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      String source = name + ":" + ++number;
      String text = line.length() > MAX_LINE ? line.substring(0, MAX_LINE) : line;
      XidLine x = XidReader.parse(text, source);
      if (x != null) {
        xids.add(x);
        continue;
      }
      exits.accept(text, source);
      ras.accept(text, source);
      smi.accept(text, source);
      ncclTests.accept(text, source);
      collectiveErrors.accept(text, source);
      steps.accept(text, source);
      horovod.accept(text, source);
      desync.accept(text, source);
    }
    List<ContextFinding> findings = new ArrayList<>(NodeLogFindings.fromXids(xids));
    findings.addAll(NodeLogFindings.fromExits(exits.exits()));
    findings.addAll(NodeLogFindings.fromRas(ras.finish()));
    findings.addAll(NodeLogFindings.fromGpuHealth(smi.finish()));
    findings.addAll(NodeLogFindings.fromNcclTests(ncclTests.finish()));
    findings.addAll(NodeLogFindings.fromCollectiveErrors(collectiveErrors.finish()));
    findings.addAll(NodeLogFindings.fromSteps(steps.finish()));
    findings.addAll(NodeLogFindings.fromHorovodStalls(horovod.finish()));
    findings.addAll(NodeLogFindings.fromDesync(desync.finish()));
    return NodeLogFindings.nodes(jobId, findings);
  }
}
