// RUN: byoc-opt %s --annotate --partition --split-input-file | filecheck %s

// The BYOC guide's example: one region, one outlined function.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[R:.*]] = extern.call @ccompiler_0(%a, %b, %c, %d) : (tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<10x10xf32>
// CHECK:       func.func private @ccompiler_0(%[[A:.*]]: tensor<10x10xf32>, %[[B:.*]]: tensor<10x10xf32>, %[[C:.*]]: tensor<10x10xf32>, %[[D:.*]]: tensor<10x10xf32>) -> tensor<10x10xf32> attributes {extern.compiler = "ccompiler"} {
// CHECK-NEXT:    %[[S:.*]] = relay.add %[[A]], %[[B]]
// CHECK-NEXT:    %[[T:.*]] = relay.subtract %[[S]], %[[C]]
// CHECK-NEXT:    %[[U:.*]] = relay.multiply %[[T]], %[[D]]
// CHECK-NEXT:    func.return %[[U]] : tensor<10x10xf32>
// CHECK-NOT:   func.func
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %1 = relay.subtract %0, %c : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %2 = relay.multiply %1, %d : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %2 : tensor<10x10xf32>
}

// -----

// tanh stays on the host and splits the chain into two functions.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[X:.*]] = extern.call @ccompiler_0(%a, %b)
// CHECK-NEXT:    %[[T:.*]] = relay.tanh %[[X]]
// CHECK-NEXT:    %[[Y:.*]] = extern.call @ccompiler_1(%[[T]], %c, %d)
// CHECK-NEXT:    func.return %[[Y]]
// CHECK:       func.func private @ccompiler_0({{.*}}) -> tensor<10x10xf32> attributes {extern.compiler = "ccompiler"}
// CHECK-NEXT:    relay.add
// CHECK-NEXT:    func.return
// CHECK:       func.func private @ccompiler_1({{.*}}) -> tensor<10x10xf32> attributes {extern.compiler = "ccompiler"}
// CHECK-NEXT:    relay.multiply
// CHECK-NEXT:    relay.subtract
// CHECK-NEXT:    func.return
func.func @main(%a: tensor<10x10xf32>, %b: tensor<10x10xf32>, %c: tensor<10x10xf32>, %d: tensor<10x10xf32>) -> tensor<10x10xf32> {
  %0 = relay.add %a, %b : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %1 = relay.tanh %0 : (tensor<10x10xf32>) -> tensor<10x10xf32>
  %2 = relay.multiply %1, %c : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  %3 = relay.subtract %2, %d : (tensor<10x10xf32>, tensor<10x10xf32>) -> tensor<10x10xf32>
  func.return %3 : tensor<10x10xf32>
}

// -----

// A region value used both inside and outside the region, and returned:
// the region yields it, and it has two results.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[S:.*]], %[[P:.*]] = extern.call @ccompiler_0(%a, %b)
// CHECK-NEXT:    %[[E:.*]] = relay.exp %[[S]]
// CHECK-NEXT:    func.return %[[P]], %[[E]], %[[S]]
// CHECK:       func.func private @ccompiler_0
// CHECK-SAME:    -> (tensor<4xf32>, tensor<4xf32>)
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.multiply %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.exp %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1, %2, %0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The same input used twice becomes one argument.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    extern.call @ccompiler_0(%a) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:       func.func private @ccompiler_0(%[[A:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    relay.multiply %[[A]], %[[A]]
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.multiply %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Nothing supported: the module is unchanged.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    relay.tanh
// CHECK-NEXT:    func.return
// CHECK-NOT:   extern
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Symbols are unique across the module, several host functions included,
// and never clash with existing functions.
// CHECK-LABEL: func.func @f(
// CHECK:         extern.call @ccompiler_1(
// CHECK:       func.func private @ccompiler_1(
// CHECK-LABEL: func.func @ccompiler_0(
// CHECK:         extern.call @ccompiler_2(
// CHECK:       func.func private @ccompiler_2(
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func @ccompiler_0(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.negative %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
