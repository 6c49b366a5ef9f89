//! Builds and inspects `pgpu` IR through the typed builders and accessors
//! that melior's `dialect!` macro generates from the ODS files.

use melior::{
    Context,
    dialect::{DialectRegistry, func},
    ir::{
        Attribute, Block, BlockLike, Location, Module, Operation, Region, RegionLike, Type,
        attribute::{IntegerAttribute, StringAttribute, TypeAttribute},
        r#type::{FunctionType, IntegerType},
    },
    ir::{ValueLike, operation::OperationLike},
    utility::register_all_dialects,
};
use pgpu_dialect::ops;

fn context() -> Context {
    let registry = DialectRegistry::new();
    register_all_dialects(&registry);
    pgpu_dialect::register(&registry);
    let context = Context::new();
    context.append_dialect_registry(&registry);
    context.load_all_available_dialects();
    context
}

/// `func @f(%n: index) { pgpu.spawn %n { %r = rank; %s = size; %t = reduce add %r } }`
#[test]
fn builds_spawn_with_rank_size_and_reduce() {
    let context = context();
    let location = Location::unknown(&context);
    let index = Type::index(&context);
    let module = Module::new(location);

    let func_body = Block::new(&[(index, location)]);
    let count = func_body.argument(0).expect("count argument");

    let spawn_body = Block::new(&[]);
    let rank = spawn_body.append_operation(ops::pgpu::rank(&context, index, location).into());
    let size = spawn_body.append_operation(ops::pgpu::size(&context, index, location).into());
    let _ = size;
    let rank_value = rank.result(0).expect("rank result").into();
    // CombiningKind is an I32EnumAttr: `add` is case 0.
    let add = IntegerAttribute::new(IntegerType::new(&context, 32).into(), 0).into();
    let reduce = spawn_body
        .append_operation(ops::pgpu::reduce(&context, index, rank_value, add, location).into());
    spawn_body.append_operation(ops::pgpu::r#yield(&context, &[], location).into());
    let spawn_region = Region::new();
    spawn_region.append_block(spawn_body);
    func_body.append_operation(
        ops::pgpu::SpawnOperation::builder(&context, location)
            .count(count.into())
            .body(spawn_region)
            .build()
            .into(),
    );
    func_body.append_operation(func::r#return(&[], location));
    let func_region = Region::new();
    func_region.append_block(func_body);
    module.body().append_operation(func::func(
        &context,
        StringAttribute::new(&context, "f"),
        TypeAttribute::new(FunctionType::new(&context, &[index], &[]).into()),
        func_region,
        &[],
        location,
    ));

    assert!(module.as_operation().verify(), "built module must verify");
    let text = module.as_operation().to_string();
    assert!(text.contains("pgpu.spawn %arg0 {"), "{text}");
    assert!(text.contains("pgpu.rank : index"), "{text}");
    assert!(text.contains("pgpu.reduce add %0 : index"), "{text}");
    assert!(reduce.result(0).is_ok());
}

/// Builds a `pgpu.scan inclusive` and a `pgpu.barrier rank_reassigned` with
/// the typed builders and reads them back through the typed accessors.
#[test]
fn accessors_read_back_operands_and_unit_attributes() {
    let context = context();
    let location = Location::unknown(&context);
    let f32_type = Type::float32(&context);
    let block = Block::new(&[(f32_type, location)]);
    let x = block.argument(0).expect("x").into();
    let max = IntegerAttribute::new(IntegerType::new(&context, 32).into(), 3).into();
    let scan = ops::pgpu::ScanOperation::builder(&context, location)
        .scanned(f32_type)
        .total(f32_type)
        .kind(max)
        .value(x)
        .inclusive(Attribute::unit(&context))
        .build();
    assert_eq!(scan.value().expect("value"), x);
    assert_eq!(scan.kind().expect("kind"), max);
    assert!(scan.inclusive().is_ok());
    assert_eq!(scan.scanned().expect("scanned").r#type(), f32_type);
    assert_eq!(scan.total().expect("total").r#type(), f32_type);

    let exclusive = ops::pgpu::scan(&context, f32_type, f32_type, x, max, location);
    assert!(exclusive.inclusive().is_err(), "unit attribute absent");

    let barrier = ops::pgpu::BarrierOperation::builder(&context, location)
        .rank_reassigned(Attribute::unit(&context))
        .build();
    assert!(barrier.rank_reassigned().is_ok());
    assert_eq!(
        barrier.as_operation().name().as_string_ref().as_str(),
        Ok("pgpu.barrier")
    );
    // The typed wrappers refuse an operation of another kind.
    assert!(ops::pgpu::BarrierOperation::try_from(Operation::from(scan)).is_err());
}

/// The verifier rules apply to IR built from Rust too: `pgpu.rank` outside an
/// SPMD region is rejected.
#[test]
fn verifier_rejects_rank_outside_spmd_region() {
    let context = context();
    let location = Location::unknown(&context);
    let module = Module::new(location);
    module
        .body()
        .append_operation(ops::pgpu::rank(&context, Type::index(&context), location).into());
    let messages = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let sink = messages.clone();
    context.attach_diagnostic_handler(move |diagnostic| {
        sink.borrow_mut().push(diagnostic.to_string());
        true
    });
    assert!(!module.as_operation().verify());
    let messages = messages.borrow();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("must be nested in an SPMD region")),
        "{messages:?}"
    );
}

/// Builds `func @g() { pgpu.taskgroup { pgpu.task { } } }` with the typed
/// builders (the yields explicit); it verifies and prints with them implicit.
#[test]
fn builds_taskgroup_with_task() {
    let context = context();
    let location = Location::unknown(&context);
    let module = Module::new(location);
    let region_of = |operations: Vec<Operation>| {
        let block = Block::new(&[]);
        for operation in operations {
            block.append_operation(operation);
        }
        block.append_operation(ops::pgpu::r#yield(&context, &[], location).into());
        let region = Region::new();
        region.append_block(block);
        region
    };
    let task = ops::pgpu::task(&context, region_of(vec![]), location);
    let group = ops::pgpu::taskgroup(&context, region_of(vec![task.into()]), location);
    let func_body = Block::new(&[]);
    func_body.append_operation(group.into());
    func_body.append_operation(func::r#return(&[], location));
    let func_region = Region::new();
    func_region.append_block(func_body);
    module.body().append_operation(func::func(
        &context,
        StringAttribute::new(&context, "g"),
        TypeAttribute::new(FunctionType::new(&context, &[], &[]).into()),
        func_region,
        &[],
        location,
    ));
    assert!(module.as_operation().verify(), "built module must verify");
    let text = module.as_operation().to_string();
    assert!(
        text.contains("pgpu.taskgroup {\n      pgpu.task {\n      }\n    }"),
        "{text}"
    );
}
