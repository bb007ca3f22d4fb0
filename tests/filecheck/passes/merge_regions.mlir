// RUN: byoc-opt %s --annotate --merge --split-input-file | filecheck %s

// A chain of supported ops becomes one region.
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %[[R:.*]] = extern.region "ccompiler"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[S:.*]] = relay.add %[[X]], %[[Y]]
// CHECK-NEXT:      %[[N:.*]] = relay.negative %[[S]]
// CHECK-NEXT:      extern.yield %[[N]] : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]]
func.func @chain(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.negative %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// Merging %2 into the region of %0 would need tanh's result inside the
// region while tanh needs the region's result: a cycle. Two regions.
// CHECK-LABEL: func.func @cycle(
// CHECK-NEXT:    %[[R0:.*]] = extern.region "ccompiler"(%a) {{.*}} {
// CHECK:           relay.add
// CHECK:         }
// CHECK-NEXT:    %[[T:.*]] = relay.tanh %[[R0]]
// CHECK-NEXT:    %[[R1:.*]] = extern.region "ccompiler"(%[[R0]], %[[T]]) {{.*}} {
// CHECK:           relay.multiply
// CHECK:         }
// CHECK-NEXT:    func.return %[[R1]]
func.func @cycle(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.multiply %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A diamond whose host branch does not depend on the region: one region
// (the host op is scheduled before it).
// CHECK-LABEL: func.func @diamond(
// CHECK-NEXT:    %[[T:.*]] = relay.tanh %a
// CHECK-NEXT:    %[[R:.*]] = extern.region "ccompiler"(%a, %[[T]]) {{.*}} {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[S:.*]] = relay.add %[[X]], %[[X]]
// CHECK-NEXT:      %[[M:.*]] = relay.multiply %[[S]], %[[Y]]
// CHECK-NEXT:      extern.yield %[[M]]
// CHECK:         func.return %[[R]]
func.func @diamond(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.multiply %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Two independent branches of one backend are merged: no path joins them.
// CHECK-LABEL: func.func @siblings(
// CHECK-NEXT:    %[[R:.*]], %[[S:.*]] = extern.region "ccompiler"(%a, %b) {{.*}} -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK:           relay.add
// CHECK:           relay.subtract
// CHECK:           extern.yield
// CHECK:         relay.tanh %[[R]]
// CHECK:         relay.exp %[[S]]
func.func @siblings(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = relay.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.subtract %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.exp %2 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1, %3 : tensor<4xf32>, tensor<4xf32>
}

// -----

// An op annotated by hand keeps its target; only merging happens.
// CHECK-LABEL: func.func @manual(
// CHECK-NEXT:    extern.region "ccompiler"(%a)
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      relay.tanh
// CHECK-NEXT:      relay.negative
func.func @manual(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.tanh %a {extern.target = "ccompiler"} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.negative %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
