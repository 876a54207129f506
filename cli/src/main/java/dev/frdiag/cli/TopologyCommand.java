package dev.frdiag.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.frdiag.readers.nccl.NcclEvent;
import dev.frdiag.readers.nccl.NcclLog;
import dev.frdiag.readers.nccl.NcclLogParser;
import dev.frdiag.readers.nccl.NcclTopology;
import dev.frdiag.report.UntrustedText;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code fr-diagnose topology <nccl-log>...}: what NCCL logs say about the job's shape, network and failures. */
@Command(name = "topology", mixinStandardHelpOptions = true,
    description = {"Prints what NCCL_DEBUG logs say: version, hosts and ranks, network and NICs, transports per "
        + "channel, rings and trees, GPU to NIC affinity, and the failures ordered by cause (not by line order)."})
final class TopologyCommand implements Callable<Integer> {
  /** Events printed per log in text form; --json has them all (up to the parser's cap). */
  static final int EVENTS_SHOWN = 20;

  @Parameters(arity = "1..*", paramLabel = "NCCL_LOG")
  List<Path> logs;

  @CommandLine.ParentCommand
  FrDiagnose parent;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    List<Map<String, Object>> docs = new ArrayList<>();
    int failed = 0;
    for (Path file : logs) {
      NcclLog log;
      try {
        log = NcclLogParser.create().parse(file);
      } catch (IOException e) {
        err.println("fr-diagnose: " + e.getMessage());
        failed++;
        continue;
      }
      if (parent.json()) {
        docs.add(toMap(log));
      } else {
        print(log, out);
      }
    }
    if (parent.json()) {
      try {
        out.println(new ObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(docs.size() == 1 ? docs.get(0) : docs));
      } catch (IOException e) {
        err.println("fr-diagnose: cannot write JSON: " + e.getMessage());
        return ExitCode.FAILURE;
      }
    }
    out.flush();
    return failed == logs.size() ? ExitCode.USAGE : ExitCode.NO_HANG;
  }

  private static void print(NcclLog log, PrintWriter out) {
    // Everything below is read from a log file: made safe for the terminal line by line.
    log.summary().stripTrailing().lines().forEach(l -> out.println(UntrustedText.line(l)));
    for (NcclTopology t : log.topologies()) {
      out.println(UntrustedText.line("GPU to NIC affinity (" + (t.host().isEmpty() ? "topology" : t.host())
          + ", maxBw " + t.maxBw() + " GB/s):"));
      t.closestNics().forEach((gpu, paths) -> paths.forEach(p -> out.println(UntrustedText.line("  " + gpu
          + (p.gpuRank() >= 0 ? " (rank " + p.gpuRank() + ")" : "") + " -> " + p.nic() + " " + p.type() + " "
          + p.bandwidth() + " GB/s"))));
    }
    List<NcclEvent> events = log.eventsByCause();
    if (!events.isEmpty()) {
      out.println("Events by cause:");
      for (NcclEvent e : events.subList(0, Math.min(EVENTS_SHOWN, events.size()))) {
        out.println(UntrustedText.line("  [" + e.domain() + "] " + e.kind() + " " + (e.host() == null ? ""
            : e.host()) + " line " + e.lineNumber() + ": " + e.explanation()));
        out.println("      " + UntrustedText.line(e.line().strip()));
      }
      if (events.size() > EVENTS_SHOWN) {
        out.println("  … and " + (events.size() - EVENTS_SHOWN) + " more");
      }
    }
    out.println();
  }

  private static Map<String, Object> toMap(NcclLog log) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("source", log.source());
    m.put("version", log.version().orElse(null));
    m.put("lines", log.lineCount());
    m.put("nccl_lines", log.ncclLineCount());
    m.put("hosts", log.hosts());
    m.put("processes", log.processes());
    m.put("networks", log.networks());
    m.put("nics", log.nics());
    m.put("communicators", log.communicators());
    m.put("ranks", log.ranks());
    m.put("transport_counts", log.transportCounts());
    m.put("channels", log.channelSummaries());
    m.put("rings", log.rings());
    m.put("trees", log.trees());
    m.put("nvls", log.nvlsPresent());
    m.put("collnet", log.collNetPresent());
    m.put("topologies", log.topologies());
    m.put("gdr", log.gdrDecisions());
    m.put("laggards", log.laggards());
    List<Map<String, Object>> events = new ArrayList<>();
    for (NcclEvent e : log.eventsByCause()) {
      Map<String, Object> em = new LinkedHashMap<>();
      em.put("kind", e.kind().name());
      em.put("domain", e.domain().name());
      em.put("time", e.timestamp() == null ? null : e.timestamp().toString());
      em.put("host", e.host());
      em.put("pid", e.pid());
      em.put("device", e.device());
      em.put("line_number", e.lineNumber());
      em.put("peer", e.peer());
      em.put("nic", e.nic());
      em.put("explanation", e.explanation());
      em.put("line", e.line());
      events.add(em);
    }
    m.put("events", events);
    m.put("flags", log.flags());
    return m;
  }
}
