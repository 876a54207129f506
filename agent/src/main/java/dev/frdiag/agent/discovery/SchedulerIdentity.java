package dev.frdiag.agent.discovery;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * The job as its scheduler and launcher name it, read from a process's environment: Slurm's job id, name and
 * requeue count, the Kubernetes pod and namespace, torchrun's run id and restart count. Reports carry it so a hang
 * can be matched to the scheduler's job and to the attempt it happened in.
 */
public final class SchedulerIdentity {
  /** Where Kubernetes mounts the pod's namespace for its service account. */
  public static final Path KUBERNETES_NAMESPACE_FILE =
      Path.of("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
  /** Environment variable → key in the Hello's scheduler map. */
  private static final Map<String, String> VARIABLES = Map.of(
      "SLURM_JOB_ID", "slurm.job_id",
      "SLURM_JOB_NAME", "slurm.job_name",
      "SLURM_RESTART_COUNT", "slurm.restart_count",
      "TORCHELASTIC_RUN_ID", "torchelastic.run_id",
      "TORCHELASTIC_RESTART_COUNT", "torchelastic.restart_count");
  private static final int MAX_VALUE_CHARS = 256;

  private SchedulerIdentity() {}

  /**
   * The scheduler's names for the job of a process with environment {@code env}, keys sorted; empty when it ran
   * under none.
   *
   * @param namespaceFile the pod's namespace file, read only inside Kubernetes; unreadable is fine
   */
  public static Map<String, String> of(Map<String, String> env, Path namespaceFile) {
    Map<String, String> out = new TreeMap<>();
    VARIABLES.forEach((variable, key) -> put(out, key, env.get(variable)));
    // Older Slurm spells it SLURM_JOBID; both are set by current ones.
    if (!out.containsKey("slurm.job_id")) {
      put(out, "slurm.job_id", env.get("SLURM_JOBID"));
    }
    if (env.containsKey("KUBERNETES_SERVICE_HOST")) {
      // POD_NAME / POD_NAMESPACE when the pod spec passes them down (the downward API); otherwise the pod's host
      // name, which Kubernetes sets to the pod name, and the service account's namespace file.
      put(out, "kubernetes.pod", env.getOrDefault("POD_NAME", env.get("HOSTNAME")));
      String namespace = env.get("POD_NAMESPACE");
      put(out, "kubernetes.namespace", namespace != null ? namespace : read(namespaceFile));
    }
    return Collections.unmodifiableMap(out);
  }

  private static void put(Map<String, String> out, String key, String value) {
    if (value != null && !value.isBlank()) {
      String v = value.strip();
      out.put(key, v.length() > MAX_VALUE_CHARS ? v.substring(0, MAX_VALUE_CHARS) : v);
    }
  }

  private static String read(Path file) {
    try {
      return file == null ? null : Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException | SecurityException e) {
      // Not mounted (automountServiceAccountToken: false) or not readable by the agent's user.
      return null;
    }
  }
}
