// RUN: byoc-opt %s --annotate --partition | filecheck %s

// A small constant is copied into the function that uses it (ccompiler
// inlines constants up to 16 elements); a large weight is passed as an
// argument; a constant also used on the host stays there too.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %big = relay.constant dense<2.000000e+00> : tensor<40x8xf32>
// CHECK-NEXT:    %small = relay.constant dense<[1.000000e+00, {{.*}}> : tensor<8xf32>
// CHECK-NEXT:    %{{.*}} = extern.call @ccompiler_0(%x, %big)
// CHECK-NEXT:    %{{.*}} = relay.tanh %small
// CHECK:       func.func private @ccompiler_0(%[[X:.*]]: tensor<40x8xf32>, %[[W:.*]]: tensor<40x8xf32>)
// CHECK-NEXT:    %[[C:.*]] = relay.constant dense<[1.000000e+00, {{.*}}> : tensor<8xf32>
// CHECK-NEXT:    %[[S:.*]] = relay.add %[[X]], %[[C]]
// CHECK-NEXT:    relay.multiply %[[S]], %[[W]]
// CHECK-NOT:   extern.inline
func.func @main(%x: tensor<40x8xf32>) -> (tensor<40x8xf32>, tensor<8xf32>) {
  %big = relay.constant dense<2.0> : tensor<40x8xf32>
  %small = relay.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %0 = relay.add %x, %small : (tensor<40x8xf32>, tensor<8xf32>) -> tensor<40x8xf32>
  %1 = relay.multiply %0, %big : (tensor<40x8xf32>, tensor<40x8xf32>) -> tensor<40x8xf32>
  %2 = relay.tanh %small : (tensor<8xf32>) -> tensor<8xf32>
  func.return %1, %2 : tensor<40x8xf32>, tensor<8xf32>
}



// A constant used only inside a region disappears from the host.
// CHECK-LABEL: func.func @only_inside(
// CHECK-NEXT:    extern.call @ccompiler_1(%x)
// CHECK-NEXT:    func.return
// CHECK:       func.func private @ccompiler_1(
// CHECK-NEXT:    relay.constant dense<3.000000e+00> : tensor<4xf32>
func.func @only_inside(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = relay.constant dense<3.0> : tensor<4xf32>
  %0 = relay.multiply %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
