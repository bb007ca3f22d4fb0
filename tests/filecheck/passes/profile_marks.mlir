// RUN: byoc-opt %s -p 'convert-relay-to-loops{profile=p_}' | filecheck %s
// RUN: byoc-opt %s -p convert-relay-to-loops | filecheck %s --check-prefix=PLAIN

// A profiling build (CompiledModule.profile): a call to the timer mark with
// the group's number before each op group of the host's function (an op
// with the ops fused into it, or a call of an external function) and with
// -1 after the last; outlined functions get none. Without the option
// nothing is added.
func.func private @ccompiler_0(%a: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {extern.compiler = "ccompiler"} {
  %0 = relay.nn.relu %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = relay.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = relay.log %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = extern.call @ccompiler_0(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = relay.nn.softmax %2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %3 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func private @ccompiler_0
// CHECK-NOT:     func.call
// CHECK:         func.return
// CHECK-LABEL: func.func @main
// CHECK-DAG:     %[[G0:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[G1:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[G2:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[END:.*]] = arith.constant -1 : i64
// CHECK:         func.call @p_mark(%[[G0]]) : (i64) -> i32
// CHECK-NEXT:    memref.alloc()
// CHECK:         math.log
// CHECK:         func.call @p_mark(%[[G1]]) : (i64) -> i32
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc()
// CHECK-NEXT:    func.call @ccompiler_0(%{{.*}}, %[[OUT]])
// CHECK-NEXT:    func.call @p_mark(%[[G2]]) : (i64) -> i32
// CHECK:         func.call @p_mark(%[[END]]) : (i64) -> i32
// CHECK-NEXT:    memref.dealloc
// CHECK:         func.return
// CHECK:       func.func private @p_mark(i64) -> i32

// PLAIN-NOT: mark
