package dev.frdiag.readers.pytorch;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A Flight Recorder dump format version ("2.9"), not the torch version. */
public record DumpVersion(int major, int minor) implements Comparable<DumpVersion> {
  /** Oldest version with the fields this reader needs (pg_config with names, collective_seq_id). */
  public static final DumpVersion OLDEST = new DumpVersion(2, 2);
  /** Newest version whose fields are known. */
  public static final DumpVersion NEWEST = new DumpVersion(2, 10);
  /** First version with the NCCL version at the top level, as {@code nccl_version}. */
  public static final DumpVersion NCCL_VERSION_KEY = new DumpVersion(2, 6);
  /** First version that calls it {@code comm_lib_version}. */
  public static final DumpVersion COMM_LIB_VERSION_KEY = new DumpVersion(2, 10);
  /** First version whose entries carry {@code thread_name} and {@code thread_id}. */
  public static final DumpVersion THREAD_FIELDS = new DumpVersion(2, 9);

  private static final Pattern FORMAT = Pattern.compile("(\\d{1,4})\\.(\\d{1,4})");

  /** @return the version, or null when {@code text} is not "major.minor" */
  public static DumpVersion parse(String text) {
    Matcher m = FORMAT.matcher(text);
    if (!m.matches()) {
      return null;
    }
    return new DumpVersion(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
  }

  public boolean atLeast(DumpVersion other) {
    return compareTo(other) >= 0;
  }

  @Override
  public int compareTo(DumpVersion o) {
    return major != o.major ? Integer.compare(major, o.major) : Integer.compare(minor, o.minor);
  }

  @Override
  public String toString() {
    return major + "." + minor;
  }
}
