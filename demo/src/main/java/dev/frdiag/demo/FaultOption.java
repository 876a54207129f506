package dev.frdiag.demo;

import dev.frdiag.testing.sim.Fault;
import dev.frdiag.testing.sim.FaultKind;
import picocli.CommandLine;

/** The faults the simulated ranks can be given, as spelled on the command line. */
enum FaultOption {
  NONE("none", FaultKind.NONE),
  CPU_STALL("cpu-stall", FaultKind.CPU_STALL),
  GPU_STALL("gpu-stall", FaultKind.GPU_STALL),
  FABRIC("fabric", FaultKind.FABRIC),
  MISMATCH("mismatch", FaultKind.MISMATCH),
  DEAD_RANK("dead-rank", FaultKind.DEAD_RANK),
  SLOW("slow", FaultKind.SLOW);

  static final String CHOICES = "none | cpu-stall | gpu-stall | fabric | mismatch | dead-rank | slow";

  final String spelling;
  final FaultKind kind;

  FaultOption(String spelling, FaultKind kind) {
    this.spelling = spelling;
    this.kind = kind;
  }

  /**
   * The fault on {@code rank} at {@code atStep}; for a fabric fault, the rank whose NIC port fails; for a slow rank,
   * issuing each step {@code delay} late from then on.
   */
  Fault at(int rank, long atStep, java.time.Duration delay) {
    return kind == FaultKind.NONE ? Fault.none() : kind == FaultKind.SLOW ? Fault.slow(rank, atStep, delay)
        : new Fault(kind, rank, atStep);
  }

  static FaultOption parse(String s) {
    for (FaultOption f : values()) {
      if (f.spelling.equalsIgnoreCase(s) || f.name().equalsIgnoreCase(s)) {
        return f;
      }
    }
    throw new CommandLine.TypeConversionException("unknown fault '" + s + "': use " + CHOICES.replace(" |", ","));
  }

  /** picocli converter. */
  static final class Converter implements CommandLine.ITypeConverter<FaultOption> {
    @Override
    public FaultOption convert(String value) {
      return parse(value);
    }
  }
}
