package dev.frdiag.readers.kernel;

import java.util.Map;

/**
 * What an Xid says about a GPU, after NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/) and the
 * driver's own names for the codes (open-gpu-kernel-modules, {@code src/common/sdk/nvidia/inc/nverror.h}).
 */
public enum XidKind {
  /**
   * A fault of the GPU, its memory, NVLink or the driver and firmware (ECC double-bit and uncontained errors, row
   * remapping, fallen off the bus, GSP timeouts, NVLink errors): the device failed the work, whatever the program.
   */
  DEVICE,
  /**
   * A fault in a process's own GPU work (graphics engine exception, MMU fault, channel reset): usually the
   * program, e.g. an illegal memory access, rarely the device.
   */
  APPLICATION,
  /**
   * A consequence of an earlier error: Xid 45, the driver tearing down a process's channels after another fault
   * (the line may name it: "caused by previous Xid 149").
   */
  SECONDARY,
  /** Any other Xid: display, video engines, informational codes, or one the catalog does not list. */
  OTHER;

  /** Xid numbers and the driver's names for them (nverror.h), for the codes this reader classifies. */
  private static final Map<Integer, String> NAMES = Map.ofEntries(
      Map.entry(13, "graphics engine exception"),
      Map.entry(31, "GPU memory page fault"),
      Map.entry(32, "push buffer DMA error"),
      Map.entry(38, "driver firmware error"),
      Map.entry(43, "GPU stopped processing, channel reset"),
      Map.entry(44, "graphics engine fault during context switch"),
      Map.entry(45, "preemptive channel cleanup after an earlier error"),
      Map.entry(46, "GPU timeout"),
      Map.entry(48, "double-bit ECC error"),
      Map.entry(56, "display engine error"),
      Map.entry(57, "video memory programming error"),
      Map.entry(58, "frame buffer memory error"),
      Map.entry(61, "PMU breakpoint"),
      Map.entry(62, "PMU halt"),
      Map.entry(63, "ECC page retirement or row remapping"),
      Map.entry(64, "ECC page retirement or row remapping failure"),
      Map.entry(74, "NVLink error"),
      Map.entry(79, "GPU has fallen off the bus"),
      Map.entry(92, "excessive single-bit ECC errors"),
      Map.entry(94, "contained ECC error"),
      Map.entry(95, "uncontained ECC error"),
      Map.entry(110, "security fault"),
      Map.entry(119, "GSP RPC timeout"),
      Map.entry(120, "GSP error"),
      Map.entry(121, "C2C link error"),
      Map.entry(136, "NVLink training failure"),
      Map.entry(140, "unrecovered ECC error"),
      Map.entry(143, "GPU initialization failure"),
      Map.entry(144, "NVLink SAW error"),
      Map.entry(145, "NVLink RLW error"),
      Map.entry(146, "NVLink TLW error"),
      Map.entry(147, "NVLink TREX error"),
      Map.entry(148, "NVLink NVLPW control error"),
      Map.entry(149, "NVLink NETIR error"),
      Map.entry(150, "NVLink MSE error"),
      Map.entry(154, "GPU recovery action changed: reset or reboot required"));

  /** The kind of Xid {@code xid}. */
  public static XidKind of(int xid) {
    return switch (xid) {
      case 13, 31, 43 -> APPLICATION;
      case 45 -> SECONDARY;
      case 32, 38, 44, 46, 48, 56, 57, 58, 61, 62, 63, 64, 74, 79, 92, 94, 95, 110, 119, 120, 121, 136, 140, 143,
          144, 145, 146, 147, 148, 149, 150, 154 -> DEVICE;
      default -> OTHER;
    };
  }

  /** "Xid 149 (NVLink NETIR error)", or "Xid 200" for a code without a name here. */
  public static String describe(int xid) {
    String name = NAMES.get(xid);
    return "Xid " + xid + (name == null ? "" : " (" + name + ")");
  }
}
