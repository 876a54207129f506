package dev.frdiag.daemon;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.daemon.access.Security;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * What a daemon refuses to serve beyond loopback, and what it serves with a warning when asked on purpose; judged
 * before any port is bound, so no test here listens beyond loopback.
 */
class ExposureTest {
  private static final Path CERT = Path.of("daemon.pem");
  private static final Path KEY = Path.of("daemon.key");
  private static final Path ACCESS = Path.of("access.json");

  @Test
  void aNetworkAddressWithoutAnAccessFileIsRefusedEvenOverTls() {
    assertThatThrownBy(() -> Daemon.exposure("0.0.0.0", 50551, new Security(CERT, KEY, null, null, false)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("refusing to serve 0.0.0.0 without --access-file: anyone who reaches it could stream false "
            + "records for any job and read every report; give --access-file (README, \"Serving a cluster\"), or "
            + "--open-access to let everyone in on purpose");
    assertThatThrownBy(() -> Daemon.exposure("0.0.0.0", 50551, new Security(null, null, null, null, true)))
        .as("plaintext on purpose is not open access on purpose").isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("without --access-file");
  }

  @Test
  void openAccessOnPurposeIsServedWithALoudWarning() {
    assertThat(Daemon.exposure("0.0.0.0", 50551, new Security(CERT, KEY, null, null, false, true, false)))
        .containsExactly("OPEN ACCESS (--open-access): serving 0.0.0.0 with no access file; anyone who reaches port "
            + "50551 may stream for, read and diagnose any job, bound only to the host that first wrote it");
  }

  @Test
  void anAccessFileOverTlsIsServedQuietlyAndLoopbackNeedsNeither() {
    assertThat(Daemon.exposure("0.0.0.0", 50551, new Security(CERT, KEY, null, ACCESS, false))).isEmpty();
    assertThat(Daemon.exposure("127.0.0.1", 50551, Security.none())).isEmpty();
  }

  @Test
  void openAccessAndAnAccessFileContradictEachOther() {
    assertThatThrownBy(() -> new Security(CERT, KEY, null, ACCESS, false, true, false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--open-access and --access-file contradict each other: give one");
  }
}
