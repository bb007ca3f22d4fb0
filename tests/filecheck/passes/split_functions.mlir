// RUN: byoc-opt %s -p 'byoc-split-functions{max-ops=2}' --split-input-file | filecheck %s
// RUN: byoc-opt %s -p 'byoc-split-functions{max-ops=2},byoc-dedup-functions' --split-input-file | filecheck %s --check-prefix=DEDUP

// Five ops, at most two per part: three no_inline parts called in order. A
// part takes what it reads from earlier ones (%a reaches the third part
// through the call chain) and returns what later ones read; the constant is
// copied into the part that reads it, not passed.

// CHECK-LABEL: func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %[[P0:.*]] = func.call @main_part0(%a) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[P1:.*]] = func.call @main_part1(%[[P0]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[P2:.*]] = func.call @main_part2(%[[P1]], %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[P2]] : tensor<4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @main_part0(%a: tensor<4xf32>) -> tensor<4xf32> attributes {no_inline} {
// CHECK-NEXT:    %{{.*}} = relay.add %a, %a
// CHECK-NEXT:    %[[T:.*]] = relay.tanh
// CHECK-NEXT:    func.return %[[T]] : tensor<4xf32>
// CHECK:       func.func private @main_part1(%{{.*}}: tensor<4xf32>) -> tensor<4xf32> attributes {no_inline} {
// CHECK-NEXT:    %[[W:.*]] = relay.constant
// CHECK-NEXT:    %{{.*}} = relay.multiply %{{.*}}, %[[W]]
// CHECK:       func.func private @main_part2(%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>) -> tensor<4xf32> attributes {no_inline} {
// CHECK-NEXT:    %{{.*}} = relay.subtract
// CHECK-NEXT:    func.return

// DEDUP-LABEL: func.func @main
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %w = relay.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = relay.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.multiply %1, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.tanh %2 : (tensor<4xf32>) -> tensor<4xf32>
  %4 = relay.subtract %3, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %4 : tensor<4xf32>
}

// -----

// A repeated block (add, tanh) cut at its period: every part is the same, and
// byoc-dedup-functions keeps one, called three times.

// CHECK-LABEL: func.func @repeated
// CHECK-COUNT-3: func.call @repeated_part
// CHECK-COUNT-3: func.func private @repeated_part

// DEDUP-LABEL: func.func @repeated(%x: tensor<4xf32>) -> tensor<4xf32> {
// DEDUP-NEXT:    %[[A:.*]] = func.call @repeated_part0(%x)
// DEDUP-NEXT:    %[[B:.*]] = func.call @repeated_part0(%[[A]])
// DEDUP-NEXT:    %[[C:.*]] = func.call @repeated_part0(%[[B]])
// DEDUP-NEXT:    func.return %[[C]]
// DEDUP:       func.func private @repeated_part0(
// DEDUP-NOT:   func.func private @repeated_part
func.func @repeated(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = relay.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = relay.add %1, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = relay.tanh %2 : (tensor<4xf32>) -> tensor<4xf32>
  %4 = relay.add %3, %3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = relay.tanh %4 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}

// -----

// A function within the budget is left alone.

// CHECK-LABEL: func.func @small
// CHECK-NEXT:    relay.add
// CHECK-NEXT:    func.return
// CHECK-NOT:   _part
func.func @small(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = relay.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
