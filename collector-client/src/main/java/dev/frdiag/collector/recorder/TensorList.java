package dev.frdiag.collector.recorder;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The shapes and dtypes of the tensors one side (input or output) of a collective carries; interned by
 * {@link FlightRecorder#tensors}, so build one per distinct layout and reuse it.
 */
public final class TensorList {
  final int id;
  private final long[][] shapes;
  private final List<String> dtypes;

  TensorList(int id, long[][] shapes, List<String> dtypes) {
    this.id = id;
    this.shapes = shapes;
    this.dtypes = dtypes;
  }

  /** Shape of each tensor (a copy). */
  public long[][] shapes() {
    long[][] copy = new long[shapes.length][];
    for (int i = 0; i < shapes.length; i++) {
      copy[i] = shapes[i].clone();
    }
    return copy;
  }

  public List<String> dtypes() {
    return dtypes;
  }

  /** Total number of elements over all tensors. */
  public long numel() {
    long total = 0;
    for (long[] shape : shapes) {
      long n = 1;
      for (long d : shape) {
        n *= d;
      }
      total += n;
    }
    return total;
  }

  /** Value key used for interning. */
  record Key(List<List<Long>> shapes, List<String> dtypes) {
    static Key of(long[][] shapes, String[] dtypes) {
      Objects.requireNonNull(shapes, "shapes");
      Objects.requireNonNull(dtypes, "dtypes");
      if (shapes.length != dtypes.length) {
        throw new IllegalArgumentException(
            "one dtype per tensor: " + shapes.length + " shapes but " + dtypes.length + " dtypes");
      }
      return new Key(
          Arrays.stream(shapes).map(s -> Arrays.stream(s).boxed().toList()).toList(), List.of(dtypes));
    }
  }
}
