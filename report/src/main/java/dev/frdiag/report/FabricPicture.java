package dev.frdiag.report;

import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.FabricMap;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Draws a {@link FabricMap} for the report page: hosts → GPUs → NICs → ports as linked boxes in SVG, the parts a
 * finding names marked (red for a fault, green for counters that did not move), the culprits outlined, and the far
 * end a finding names written beside the part that saw it. Hosts nothing marks shrink to one line. Below the
 * picture, every finding with the line or counter it rests on.
 */
final class FabricPicture {
  private static final int ROW = 26;
  private static final int BOX = 20;
  private static final int GAP = 12;
  private static final int HOST_X = 0;
  private static final int HOST_W = 150;
  private static final int GPU_X = 190;
  private static final int GPU_W = 180;
  private static final int NIC_X = 410;
  private static final int NIC_W = 110;
  private static final int PORT_X = 560;
  private static final int PORT_W = 80;
  private static final int PEER_X = 670;
  private static final int WIDTH = 900;

  private FabricPicture() {}

  /** One finding as the table under the picture lists it. */
  private record Row(String where, FabricMap.Mark mark) {}

  static void draw(StringBuilder b, FabricMap map) {
    if (map == null || map.hosts().isEmpty()) {
      return;
    }
    StringBuilder svg = new StringBuilder();
    List<Row> findings = new ArrayList<>();
    int y = GAP;
    boolean several = map.hosts().size() > 1;
    for (FabricMap.Host host : map.hosts()) {
      if (several && !host.culprit() && !host.failing() && host.marks().isEmpty()) {
        y = quietHost(svg, host, y);
      } else {
        y = host(svg, host, y, findings);
      }
      y += GAP;
    }
    b.append("<section id=\"fabric\"><h2>Network</h2><p class=\"sub\">hosts → GPUs (by rank) → NICs → ports, "
        + "as the nodes' NCCL lines and InfiniBand counters name them; a part a finding names is marked")
        .append(map.otherHosts() > 0 ? "; " + map.otherHosts() + " more host" + (map.otherHosts() == 1 ? "" : "s")
            + " with no finding not drawn" : "").append(".</p>");
    b.append("<svg class=\"fabric\" role=\"img\" viewBox=\"0 0 ").append(WIDTH).append(' ').append(y)
        .append("\" width=\"").append(WIDTH).append("\" height=\"").append(y).append("\">").append(svg)
        .append("</svg>");
    b.append("<p class=\"legend\"><span><i class=\"cell key failing\"></i> a finding names it</span>"
        + "<span><i class=\"cell key quiet\"></i> counters did not move</span>"
        + "<span><i class=\"cell key culprit\"></i> culprit</span></p>");
    List<Row> faults = findings.stream().filter(r -> r.mark().failing()).toList();
    List<String> quiet = findings.stream().filter(r -> !r.mark().failing()).map(Row::where).distinct().toList();
    if (!findings.isEmpty()) {
      b.append("<table class=\"list\" id=\"fabric-findings\"><tr><th>where</th><th>finding</th>"
          + "<th>read from</th></tr>");
      for (Row r : faults) {
        b.append("<tr><td><code>").append(h(r.where())).append("</code></td><td><span class=\"kind\">")
            .append(h(r.mark().kind().wire())).append("</span> ").append(h(r.mark().detail())).append("</td><td><code>")
            .append(h(r.mark().source())).append("</code></td></tr>");
      }
      if (!quiet.isEmpty()) {
        // Healthy ports are the many: one line for all of them keeps the faults in view.
        b.append("<tr><td><code>").append(h(quiet.size() == 1 ? quiet.get(0) : quiet.size() + " parts"))
            .append("</code></td><td><span class=\"kind\">").append(Evidence.Kind.QUIET_COUNTERS.wire())
            .append("</span> no error, wait or retransmission counter moved").append(quiet.size() == 1 ? ""
                : " on " + h(String.join(", ", quiet))).append("</td><td></td></tr>");
      }
      b.append("</table>");
    }
    b.append("</section>");
  }

  /** A host no finding names, on one line: its name and how many GPUs and NICs it has. */
  private static int quietHost(StringBuilder svg, FabricMap.Host host, int y) {
    box(svg, "host", HOST_X, y, HOST_W, BOX, host.name(), host.name() + ": no finding", false);
    text(svg, GPU_X, y + 14, host.gpus().size() + " GPU" + (host.gpus().size() == 1 ? "" : "s") + " · "
        + host.nics().size() + " NIC" + (host.nics().size() == 1 ? "" : "s") + " · no finding", "dim");
    return y + ROW;
  }

  private static int host(StringBuilder svg, FabricMap.Host host, int top, List<Row> findings) {
    Map<String, Integer> nicRow = new LinkedHashMap<>();
    int portRows = 0;
    for (FabricMap.Nic nic : host.nics()) {
      nicRow.put(nic.name(), portRows);
      portRows += Math.max(1, nic.ports().size());
    }
    int rows = Math.max(1, Math.max(host.gpus().size(), portRows));
    int hostY = top + (rows * ROW - BOX) / 2;
    box(svg, "host" + state(host.marks()) + (host.culprit() ? " culprit" : ""), HOST_X, hostY,
        HOST_W, BOX, host.name(), host.name() + marks(host.marks()), false);
    host.marks().forEach(m -> findings.add(new Row(host.name(), m)));
    peer(svg, host.marks(), HOST_X + HOST_W, hostY);
    for (int i = 0; i < host.gpus().size(); i++) {
      FabricMap.Gpu g = host.gpus().get(i);
      int gy = top + i * ROW;
      line(svg, HOST_X + HOST_W, hostY + BOX / 2, GPU_X, gy + BOX / 2, false);
      String label = (g.rank() >= 0 ? "rank " + g.rank() : "GPU") + (g.device() >= 0 ? " · cuda:" + g.device() : "")
          + (g.device() < 0 && !g.busId().isEmpty() ? " · " + g.busId() : "");
      String where = host.name() + " " + label;
      box(svg, "gpu" + state(g.marks()) + (g.culprit() ? " culprit" : ""), GPU_X, gy, GPU_W,
          BOX, label, where + (g.busId().isEmpty() ? "" : " (bus " + g.busId() + ")")
              + (g.nic().isEmpty() ? ", NIC not named" : ", uses " + g.nic()) + marks(g.marks()), g.culprit());
      g.marks().forEach(m -> findings.add(new Row(where, m)));
      Integer row = nicRow.get(g.nic());
      if (row != null) {
        line(svg, GPU_X + GPU_W, gy + BOX / 2, NIC_X, top + row * ROW + BOX / 2, false);
      }
      peer(svg, g.marks(), GPU_X + GPU_W, gy);
    }
    for (FabricMap.Nic nic : host.nics()) {
      int first = nicRow.get(nic.name());
      int span = Math.max(1, nic.ports().size());
      int ny = top + first * ROW;
      int nh = (span - 1) * ROW + BOX;
      String where = host.name() + " " + nic.name();
      box(svg, "nic" + state(nic.marks()), NIC_X, ny, NIC_W, nh,
          nic.name(), where + marks(nic.marks()), false);
      nic.marks().forEach(m -> findings.add(new Row(where, m)));
      peer(svg, nic.marks(), NIC_X + NIC_W, ny);
      for (int p = 0; p < nic.ports().size(); p++) {
        FabricMap.Port port = nic.ports().get(p);
        int py = ny + p * ROW;
        String at = where + " port " + port.number();
        line(svg, NIC_X + NIC_W, py + BOX / 2, PORT_X, py + BOX / 2, false);
        box(svg, "port" + state(port.marks()), PORT_X, py,
            PORT_W, BOX, "port " + port.number(), at + marks(port.marks()), false);
        port.marks().forEach(m -> findings.add(new Row(at, m)));
        peer(svg, port.marks(), PORT_X + PORT_W, py);
      }
    }
    return top + rows * ROW;
  }

  /** The far end the first finding with one names, linked from the part at {@code x, y} with a dashed line. */
  private static void peer(StringBuilder svg, List<FabricMap.Mark> marks, int x, int y) {
    marks.stream().filter(m -> !m.peer().isEmpty()).findFirst().ifPresent(m -> {
      line(svg, x, y + BOX / 2, PEER_X, y + BOX / 2, true);
      text(svg, PEER_X + 4, y + 14, "peer " + m.peer(), "peer");
    });
  }

  /** The class a part is drawn with: red when a fault names it, green when only quiet counters do. */
  private static String state(List<FabricMap.Mark> marks) {
    return FabricMap.failing(marks) ? " failing" : marks.isEmpty() ? "" : " quiet";
  }

  private static String marks(List<FabricMap.Mark> marks) {
    StringBuilder s = new StringBuilder();
    marks.forEach(m -> s.append("\n").append(m.kind().wire()).append(": ").append(m.detail()));
    return s.toString();
  }

  private static void box(StringBuilder svg, String css, int x, int y, int w, int hgt, String label, String title,
      boolean culprit) {
    svg.append("<g class=\"").append(css).append("\"").append(culprit ? " data-culprit=\"true\"" : "")
        .append("><rect x=\"").append(x).append("\" y=\"").append(y).append("\" width=\"").append(w)
        .append("\" height=\"").append(hgt).append("\" rx=\"3\"/>");
    text(svg, x + 6, y + 14, label.length() > 26 ? label.substring(0, 25) + "…" : label, "");
    svg.append("<title>").append(h(title)).append("</title></g>");
  }

  private static void line(StringBuilder svg, int x1, int y1, int x2, int y2, boolean dashed) {
    svg.append("<line x1=\"").append(x1).append("\" y1=\"").append(y1).append("\" x2=\"").append(x2)
        .append("\" y2=\"").append(y2).append(dashed ? "\" class=\"dashed\"/>" : "\"/>");
  }

  private static void text(StringBuilder svg, int x, int y, String text, String css) {
    svg.append("<text x=\"").append(x).append("\" y=\"").append(y).append(css.isEmpty() ? "" : "\" class=\"" + css)
        .append("\">").append(h(text)).append("</text>");
  }

  private static String h(String text) {
    return UntrustedText.html(text);
  }
}
