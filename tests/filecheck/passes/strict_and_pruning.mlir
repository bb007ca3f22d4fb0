// RUN: not byoc-opt %s --annotate --partition --no-fallback 2>&1 | filecheck %s --check-prefix=STRICT
// RUN: byoc-opt %s --annotate --partition --min-region-size=2 | filecheck %s --check-prefix=PRUNE
// RUN: byoc-opt %s --annotate --partition --min-region-size=4 | filecheck %s --check-prefix=ALLHOST
// RUN: byoc-opt %s -p 'byoc-annotate{targets=ccompiler},byoc-partition{min-region-size=2}' | filecheck %s --check-prefix=PRUNE

// Strict mode lists every op no backend takes, with its place and the reason.
// STRICT: error: --no-fallback: 2 op(s) are not supported by ccompiler:
// STRICT-NEXT: strict_and_pruning.mlir:25:3: 'relay.tanh': ccompiler does not support relay.tanh
// STRICT-NEXT: strict_and_pruning.mlir:28:3: 'relay.exp': ccompiler does not support relay.exp

// The one-op region of add is pruned back to the host; the two-op one stays.
// PRUNE-LABEL: func.func @main(
// PRUNE-NEXT:    relay.add %a, %b
// PRUNE-NEXT:    relay.tanh
// PRUNE-NEXT:    extern.call @ccompiler_0(
// PRUNE-NEXT:    relay.exp
// PRUNE-NEXT:    func.return
// PRUNE:       func.func private @ccompiler_0(
// PRUNE-NEXT:    relay.multiply
// PRUNE-NEXT:    relay.subtract

// ALLHOST-NOT: extern
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %1 = relay.tanh %0 : (tensor<10x10xf32>) -> tensor<10x10xf32>
  %2 = relay.multiply %1, %c : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %3 = relay.subtract %2, %d : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %4 = relay.exp %3 : (tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %4 : tensor<10x10xf32>
}
