from syncscan.cli import main

raise SystemExit(main())
