// RUN: byoc-opt %s -p byoc-simplify --split-input-file | filecheck %s
// RUN: byoc-opt %s --simplify --split-input-file | filecheck %s

// The whole pipeline on a block as DenseNet imports it: batch norm with its
// scale and shift as Unsqueeze -> Mul -> Add, the parameters reshaped at run
// time. Everything folds into the conv2d: conv2d -> bias_add -> relu.
func.func @densenet_block(%x: tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32> {
  %w = relay.constant dense<[[[[1.0]], [[0.0]]], [[[0.0]], [[1.0]]]]> : tensor<2x2x1x1xf32>
  %one = relay.constant dense<1.0> : tensor<2xf32>
  %zero = relay.constant dense<0.0> : tensor<2xf32>
  %gamma = relay.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %beta = relay.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %0 = relay.nn.conv2d %x, %w : (tensor<1x2x3x5xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x5xf32>
  %1 = relay.nn.batch_norm %0, %one, %zero, %zero, %one {epsilon = 0.0 : f32} : (tensor<1x2x3x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x5xf32>
  %g = relay.reshape %gamma {newshape = array<i64: 2, 1, 1>} : (tensor<2xf32>) -> tensor<2x1x1xf32>
  %2 = relay.multiply %1, %g : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  %b = relay.reshape %beta {newshape = array<i64: 2, 1, 1>} : (tensor<2xf32>) -> tensor<2x1x1xf32>
  %3 = relay.add %2, %b : (tensor<1x2x3x5xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x5xf32>
  %4 = relay.nn.relu %3 : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  func.return %4 : tensor<1x2x3x5xf32>
}

// CHECK-LABEL: func.func @densenet_block(%x: tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32> {
// CHECK-NEXT:    %w = relay.constant dense<{{\[\[\[\[}}2.000000e+00]], {{\[\[}}0.000000e+00]]], {{\[\[\[}}0.000000e+00]], {{\[\[}}3.000000e+00]]]]> : tensor<2x2x1x1xf32>
// CHECK-NEXT:    %[[C:.*]] = relay.nn.conv2d %x, %w
// CHECK-NEXT:    %[[B:.*]] = relay.constant dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = relay.nn.bias_add %[[C]], %[[B]]
// CHECK-NEXT:    %[[R:.*]] = relay.nn.relu %[[Y]]
// CHECK-NEXT:    func.return %[[R]]
// CHECK-NEXT:  }

// -----

// A pre-activation batch norm (after a concatenation, as in DenseNet) is one
// multiply and add, which the host fuses with the relu; a scale of 1 leaves
// only the add.
func.func @after_concat(%x: tensor<1x1x2x2xf32>, %y: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %one = relay.constant dense<1.0> : tensor<2xf32>
  %mean = relay.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = relay.concatenate %x, %y {axis = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  %1 = relay.nn.batch_norm %0, %one, %one, %mean, %one {epsilon = 0.0 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %2 = relay.nn.relu %1 : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %2 : tensor<1x2x2x2xf32>
}

// CHECK-LABEL: func.func @after_concat
// CHECK-NEXT:    %[[C:.*]] = relay.concatenate %x, %y
// CHECK-NEXT:    %shift = relay.constant dense<{{\[\[\[}}0.000000e+00]], {{\[\[}}-1.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %[[A:.*]] = relay.add %[[C]], %shift
// CHECK-NEXT:    %[[R:.*]] = relay.nn.relu %[[A]]
// CHECK-NEXT:    func.return %[[R]]
