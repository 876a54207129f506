package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * One {@code GPU Direct RDMA Enabled|Disabled for GPU … / HCA … (distance d <= max)} line.
 *
 * @param host the printing host
 * @param pid the printing process
 * @param gpu the GPU as printed (a rank-local index in new versions, a bus id in old ones)
 * @param hca the HCA as printed (NCCL's NIC index)
 * @param enabled whether GPUDirect RDMA is used between them
 * @param distance the PCI path distance NCCL computed
 * @param maxDistance the largest distance NCCL accepts for GDR ({@code NCCL_NET_GDR_LEVEL})
 */
public record GdrDecision(String host, int pid, String gpu, String hca, boolean enabled, int distance,
    int maxDistance) {
  public GdrDecision {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(gpu, "gpu");
    Objects.requireNonNull(hca, "hca");
  }
}
