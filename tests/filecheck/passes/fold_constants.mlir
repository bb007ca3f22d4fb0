// RUN: byoc-opt %s -p byoc-fold-constants --split-input-file | filecheck %s
// RUN: byoc-opt %s -p 'byoc-fold-constants{max-elements=3}' --split-input-file | filecheck %s --check-prefix=SMALL

// A chain of ops on constants folds into one constant, computed by the numpy
// reference; the op reading a function argument stays.
func.func @chain(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %a = relay.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = relay.constant dense<2.0> : tensor<2x2xf32>
  %0 = relay.multiply %a, %b : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = relay.transpose %0 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %2 = relay.add %x, %1 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %2 : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @chain(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
// CHECK-NEXT:    %{{.*}} = relay.constant dense<{{\[}}[2.000000e+00, 6.000000e+00], [4.000000e+00, 8.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    %{{.*}} = relay.add %x, %{{.*}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }

// SMALL-LABEL: func.func @chain
// SMALL:         relay.multiply
// SMALL:         relay.transpose

// -----

// Compute ops fold too; a constant also used unfolded stays.
func.func @dense(%x: tensor<1x3xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %a = relay.constant dense<[[1.0, 0.0, 2.0]]> : tensor<1x3xf32>
  %w = relay.constant dense<[[1.0, 1.0, 1.0], [0.0, 1.0, 0.5]]> : tensor<2x3xf32>
  %0 = relay.nn.dense %a, %w : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
  %1 = relay.nn.dense %x, %w : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<1x2xf32>
  func.return %0, %1 : tensor<1x2xf32>, tensor<1x2xf32>
}

// CHECK-LABEL: func.func @dense(%x: tensor<1x3xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
// CHECK-NEXT:    %w = relay.constant
// CHECK-NEXT:    %[[C:.*]] = relay.constant dense<{{\[}}[3.000000e+00, 1.000000e+00]]> : tensor<1x2xf32>
// CHECK-NEXT:    %[[D:.*]] = relay.nn.dense %x, %w
// CHECK-NEXT:    func.return %[[C]], %[[D]]

// SMALL-LABEL: func.func @dense
// SMALL:         relay.constant dense<{{\[}}[3.000000e+00, 1.000000e+00]]>

// -----

// A broadcast that would make a large constant out of a small one is left
// alone (the model would grow); so is an op on a function argument.
func.func @broadcast(%x: tensor<300x300xf32>) -> tensor<300x300xf32> {
  %a = relay.constant dense<1.0> : tensor<300x1xf32>
  %b = relay.constant dense<2.0> : tensor<1x300xf32>
  %0 = relay.add %a, %b : (tensor<300x1xf32>, tensor<1x300xf32>) -> tensor<300x300xf32>
  %1 = relay.add %x, %0 : (tensor<300x300xf32>, tensor<300x300xf32>) -> tensor<300x300xf32>
  func.return %1 : tensor<300x300xf32>
}

// CHECK-LABEL: func.func @broadcast
// CHECK:         %[[B:.*]] = relay.add %a, %b : (tensor<300x1xf32>, tensor<1x300xf32>) -> tensor<300x300xf32>
// CHECK-NEXT:    relay.add %x, %[[B]]
