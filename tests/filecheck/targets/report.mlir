// RUN: byoc-opt %s --annotate=ccompiler --partition --min-region-size=2 -t report | filecheck %s
// RUN: byoc-opt %s --annotate --partition -t dot | filecheck %s --check-prefix=DOT

// CHECK:      # byoc partition report
// CHECK-NEXT: backend ccompiler: 1 function(s), 2 op(s)
// CHECK-NEXT:   @ccompiler_0: 2 op(s)
// CHECK-NEXT:     relay.multiply  {{.*}}report.mlir:27:3
// CHECK-NEXT:     relay.subtract  {{.*}}report.mlir:28:3
// CHECK-NEXT: host: 2 op(s)
// CHECK-NEXT:   relay.add  {{.*}}report.mlir:25:3  pruned: ccompiler takes it, but its region had fewer than 2 ops (--min-region-size)
// CHECK-NEXT:   relay.tanh  {{.*}}report.mlir:26:3  unsupported: ccompiler does not support relay.tanh

// DOT:      digraph byoc {
// DOT:        subgraph "cluster_main" {
// DOT:          "main.arg0" [label="a"
// DOT:          "main.0" [label="@ccompiler_0 (ccompiler)\nrelay.add", fillcolor="[[COLOUR:#[0-9a-f]+]]"];
// DOT-NEXT:     "main.arg0" -> "main.0";
// DOT-NEXT:     "main.arg1" -> "main.0";
// DOT-NEXT:     "main.1" [label="relay.tanh", fillcolor="#ffffff"];
// DOT-NEXT:     "main.0" -> "main.1";
// DOT-NEXT:     "main.2" [label="@ccompiler_1 (ccompiler)\nrelay.multiply\nrelay.subtract", fillcolor="[[COLOUR]]"];
// DOT:        // ccompiler: [[COLOUR]]
// DOT-NEXT: }
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %1 = relay.tanh %0 : (tensor<10x10xf32>) -> tensor<10x10xf32>
  %2 = relay.multiply %1, %c : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %3 = relay.subtract %2, %d : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %3 : tensor<10x10xf32>
}
