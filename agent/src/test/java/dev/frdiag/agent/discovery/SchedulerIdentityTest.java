package dev.frdiag.agent.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SchedulerIdentityTest {
  @TempDir
  Path dir;

  @Test
  void namesASlurmJobAndItsRequeueAndTheTorchrunAttempt() {
    Map<String, String> env = Map.of("SLURM_JOB_ID", "4242", "SLURM_JOB_NAME", "llama-7b", "SLURM_RESTART_COUNT",
        "1", "TORCHELASTIC_RUN_ID", "4242", "TORCHELASTIC_RESTART_COUNT", "2", "PATH", "/bin");

    assertThat(SchedulerIdentity.of(env, dir.resolve("none"))).isEqualTo(Map.of(
        "slurm.job_id", "4242", "slurm.job_name", "llama-7b", "slurm.restart_count", "1",
        "torchelastic.restart_count", "2", "torchelastic.run_id", "4242"));
  }

  @Test
  void namesAKubernetesPodAndTheNamespaceOfItsServiceAccount() throws IOException {
    Path namespace = Files.writeString(dir.resolve("namespace"), "training");
    Map<String, String> env = Map.of("KUBERNETES_SERVICE_HOST", "10.96.0.1", "HOSTNAME", "llama-worker-3");

    assertThat(SchedulerIdentity.of(env, namespace)).isEqualTo(Map.of(
        "kubernetes.namespace", "training", "kubernetes.pod", "llama-worker-3"));
    assertThat(SchedulerIdentity.of(Map.of("KUBERNETES_SERVICE_HOST", "10.96.0.1", "POD_NAME", "p",
        "POD_NAMESPACE", "ns"), dir.resolve("unreadable"))).isEqualTo(Map.of(
        "kubernetes.namespace", "ns", "kubernetes.pod", "p"));
  }

  @Test
  void isEmptyOutsideAnyScheduler() {
    assertThat(SchedulerIdentity.of(Map.of("HOSTNAME", "laptop", "RANK", "0"), dir.resolve("none"))).isEmpty();
  }
}
