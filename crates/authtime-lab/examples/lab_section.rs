//! Runs one lab section in quick mode: `cargo run --release -p authtime-lab --example lab_section -- SECTION DIR`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(section), Some(out)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: lab_section SECTION DIR");
        std::process::exit(2);
    };
    let only = match authtime_lab::SectionId::parse(section) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let opts = authtime_lab::LabOptions {
        quick: true,
        only: Some(only),
        out: out.into(),
        duration: None,
        xdp_protocols: None,
    };
    let mut progress = authtime_lab::Progress::new(|l| eprintln!("{l}"));
    if let Err(e) = authtime_lab::run(&opts, &mut progress) {
        eprintln!("lab: {e}");
        std::process::exit(1);
    }
}
