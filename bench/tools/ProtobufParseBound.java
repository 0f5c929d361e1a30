import com.google.protobuf.DescriptorProtos;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

// protobuf-java's DynamicMessage.parseFrom alone on the bench's payloads:
// the first step of Spark's from_protobuf for every row (the conversion
// into a Spark row and Spark's own work come on top), so its MB/s bound
// from_protobuf's from above. Used by decode_bench.py.
//   java -cp protobuf-java.jar:. ProtobufParseBound set.desc Message payloads.hex seconds
public class ProtobufParseBound {
  public static void main(String[] a) throws Exception {
    DescriptorProtos.FileDescriptorSet set =
        DescriptorProtos.FileDescriptorSet.parseFrom(Files.readAllBytes(Paths.get(a[0])));
    Map<String, FileDescriptor> built = new HashMap<>();
    FileDescriptor last = null;
    for (DescriptorProtos.FileDescriptorProto p : set.getFileList()) { // imports first
      List<FileDescriptor> deps = new ArrayList<>();
      for (String d : p.getDependencyList()) deps.add(built.get(d));
      last = FileDescriptor.buildFrom(p, deps.toArray(new FileDescriptor[0]));
      built.put(p.getName(), last);
    }
    Descriptor type = last.findMessageTypeByName(a[1]);
    List<byte[]> payloads = new ArrayList<>();
    long size = 0;
    for (String line : Files.readAllLines(Paths.get(a[2]))) {
      byte[] b = HexFormat.of().parseHex(line);
      payloads.add(b);
      size += b.length;
    }
    double seconds = Double.parseDouble(a[3]);
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long sink = 0;
    for (int round = 0; round < 2; round++) { // the first round warms up the JIT
      long n = 0, t0 = System.nanoTime(), c0 = mx.getCurrentThreadCpuTime();
      while (System.nanoTime() - t0 < seconds * 1e9) {
        for (byte[] b : payloads) sink += DynamicMessage.parseFrom(type, b) == null ? 1 : 0;
        n++;
      }
      double wall = (System.nanoTime() - t0) / 1e9, cpu = (mx.getCurrentThreadCpuTime() - c0) / 1e9;
      if (round == 1) System.out.printf("wall %.1f cpu %.1f %d%n", n * size / wall / 1e6, n * size / cpu / 1e6, sink);
    }
  }
}
