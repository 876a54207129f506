package dev.frdiag.agent.probe;

import java.util.List;
import java.util.Objects;

/**
 * One command the agent runs on its node for evidence, e.g. {@code dmesg} for the driver's Xid lines,
 * {@code ncclras} for NCCL's RAS report or {@code nvidia-smi -q} for the GPUs' memory health.
 *
 * @param name what the findings' sources are labelled with ("dmesg:812")
 * @param command the program and its arguments, looked up on PATH
 */
public record NodeProbe(String name, List<String> command) {
  public NodeProbe {
    Objects.requireNonNull(name, "name");
    command = List.copyOf(command);
    if (command.isEmpty()) {
      throw new IllegalArgumentException("probe " + name + " has no command");
    }
  }


  /**
   * A probe from its option text: {@code name} alone runs the program of that name; {@code name=program args…}
   * runs that command.
   */
  public static NodeProbe parse(String text) {
    String t = text.strip();
    int eq = t.indexOf('=');
    if (eq < 0) {
      return new NodeProbe(t, List.of(t));
    }
    List<String> command = List.of(t.substring(eq + 1).strip().split("\\s+"));
    return new NodeProbe(t.substring(0, eq).strip(), command.size() == 1 && command.get(0).isEmpty() ? List.of()
        : command);
  }
}
