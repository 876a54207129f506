package dev.frdiag.readers.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code nvidia-smi -q} as it prints: the memory sections are the lines posted in NVIDIA/DCGM#50 (a healthy H100)
 * and leptonai/gpud#80 (a GPU with an uncorrectable error whose row remap is pending), inside a GPU section.
 */
class NvidiaSmiReaderTest {
  private static final String HEALTHY = """
      GPU 00000000:18:00.0
          ECC Errors
              Volatile
                  SRAM Correctable              : 0
                  SRAM Uncorrectable            : 0
                  DRAM Correctable              : 0
                  DRAM Uncorrectable            : 0
              Aggregate
                  SRAM Correctable              : 0
                  SRAM Uncorrectable            : 0
                  DRAM Correctable              : 0
                  DRAM Uncorrectable            : 0
          Retired Pages
              Single Bit ECC                    : N/A
              Double Bit ECC                    : N/A
              Pending Page Blacklist            : N/A
          Remapped Rows
              Correctable Error                 : 0
              Uncorrectable Error               : 0
              Pending                           : No
              Remapping Failure Occurred        : No
      """;

  private static final String PENDING = """
      GPU 00000000:DC:00.0
          ECC Errors
              Volatile
                  DRAM Correctable              : 12
                  DRAM Uncorrectable            : 2
          Remapped Rows
              Correctable Error                 : 0
              Uncorrectable Error               : 4
              Pending                           : Yes
          Processes
              GPU instance ID                   : N/A
              Compute instance ID               : N/A
              Process ID                        : 1818990
                  Type                          : C
                  Name                          : python3
                  Used GPU Memory               : 70312 MiB
      """;

  @Test
  void aHealthyGpuIsNoProblemAndAPendingRemapIs() {
    List<GpuHealth> gpus = read(HEALTHY + PENDING);

    assertThat(gpus).singleElement().satisfies(g -> {
      assertThat(g.busId()).isEqualTo("0000:dc:00");
      assertThat(g.pids()).containsExactly(1818990L);
      assertThat(g.problems()).containsExactly("ECC Errors → Volatile → DRAM Uncorrectable: 2",
          "Remapped Rows: Pending: Yes");
      assertThat(g.source()).isEqualTo("smi:22");
    });
  }

  @Test
  void aLineAtTheMarginEndsTheGpusSection() {
    assertThat(read(PENDING.replace("    Processes", "some other tool's line\n    Processes"))).singleElement()
        .satisfies(g -> assertThat(g.pids()).isEmpty());
  }

  private static List<GpuHealth> read(String text) {
    NvidiaSmiReader r = new NvidiaSmiReader();
    int n = 0;
    for (String line : text.split("\n")) {
      r.accept(line, "smi:" + ++n);
    }
    return r.finish();
  }
}
