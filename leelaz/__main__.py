"""`python -m leelaz` runs the same command line as the `leelaz` script."""

from leelaz.cli import main

if __name__ == "__main__":
    main()
