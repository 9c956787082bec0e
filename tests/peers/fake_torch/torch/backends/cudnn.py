def version():
    return 91000
